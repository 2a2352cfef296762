"""``python -m rollax``: the command line."""

import sys

from rollax.cli import main

sys.exit(main())
