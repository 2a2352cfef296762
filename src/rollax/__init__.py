"""rollax: JAX-native reinforcement learning.

Fresh resets, termination kept apart from truncation, exact step budgets and resumable runs.
"""

# First: sets XLA_FLAGS before anything starts JAX's CPU backend (see rollax._xla_cpu).
from rollax import _xla_cpu  # noqa: F401, I001
from rollax import spaces
from rollax.envs import (
    Environment,
    EnvParams,
    EnvState,
    VecEnv,
    make,
    register,
    registered_envs,
    suite_envs,
)
from rollax.types import TimeStep

__version__ = "0.1.0"


def _register_with_gymnasium() -> None:
    """Make ``gymnasium.make("rollax/<id>")`` work whenever Gymnasium is installed."""
    import importlib.util

    if importlib.util.find_spec("gymnasium") is not None:
        try:
            import rollax.adapters.gymnasium  # noqa: F401  (registers on import)
        except ImportError:  # a Gymnasium older than the adapter needs (>= 1.1)
            pass


_register_with_gymnasium()

__all__ = [
    "EnvParams",
    "EnvState",
    "Environment",
    "TimeStep",
    "VecEnv",
    "__version__",
    "make",
    "register",
    "registered_envs",
    "suite_envs",
    "spaces",
]
