"""Run ``rollax`` commands one after another in one fresh Python process.

Each command would spend about 2 s starting Python and importing JAX; in one process they
start once, and programs they share compile once. Each runs as ``python -m rollax`` runs
it: ``rollax.cli.main(argv)``, its exit status (an argparse error's ``SystemExit`` code too)
and what it wrote to stderr recorded, with the programs it compiled (``jax.monitoring``'s
backend compiles: their names, and those read from the persistent compilation cache); any
other exception is printed with its traceback into that stderr, with status ``None``.
"""

from __future__ import annotations

import json
import subprocess
import sys

_SCRIPT = """
import contextlib, io, json, sys, traceback
from rollax._compile import compile_events
from rollax.cli import main
results = []
for argv in json.load(sys.stdin):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), compile_events() as events:
        try:
            status = main(argv)
        except SystemExit as e:
            status = e.code
        except BaseException:
            traceback.print_exc()
            status = None
    results.append({"argv": argv, "status": status, "stderr": err.getvalue(),
                    "programs": events.programs, "cached": events.cached})
print(json.dumps(results))
"""


def rollax_in_one_process(commands: list[list[str]], env: dict) -> list[dict]:
    """``{"argv", "status", "stderr", "programs", "cached"}`` of each command, in order, all
    run in one process (``cached``: the programs read from the compilation cache)."""
    proc = subprocess.run(
        [sys.executable, "-c", _SCRIPT],
        input=json.dumps(commands), env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])
