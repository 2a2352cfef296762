"""The training layer that every agent shares.

Configuration files decoded by field type, and the random keys of a run.
"""

from rollax.training._config import ConfigError, config_to_json, decode_config
from rollax.training._keys import RunKeys, run_keys

__all__ = ["ConfigError", "RunKeys", "config_to_json", "decode_config", "run_keys"]
