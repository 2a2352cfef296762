"""rollax: JAX-native reinforcement learning.

Fresh resets, termination kept apart from truncation, exact step budgets and resumable runs.
"""

from rollax import spaces
from rollax._xla_cpu import avoid_cpu_scheduler_deadlock, cores_as_devices
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
    "avoid_cpu_scheduler_deadlock",
    "cores_as_devices",
    "make",
    "register",
    "registered_envs",
    "suite_envs",
    "spaces",
]
