"""rollax: JAX-native reinforcement learning.

Fresh resets, termination kept apart from truncation, exact step budgets and resumable runs.
"""

from rollax import spaces
from rollax.envs import (
    Environment,
    EnvParams,
    EnvState,
    VecEnv,
    make,
    register,
    registered_envs,
)
from rollax.types import TimeStep

__version__ = "0.1.0"

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
    "spaces",
]
