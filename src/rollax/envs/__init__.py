"""The environment API, the registry, the environment checker and the builtin environments.

Environments are found by registered id, or by import path (``"package.module:EnvClass"``,
``"package.module/Env-v0"``), or through the ``rollax.envs`` entry points of installed
packages (see :func:`make`).
"""

from rollax.envs._base import Environment, EnvParams
from rollax.envs._check import check_env, check_spaces
from rollax.envs._findings import EnvCheckError, Finding
from rollax.envs._registry import (
    ENTRY_POINT_GROUP,
    EnvSpec,
    make,
    register,
    registered_envs,
    spec,
    suite_envs,
)
from rollax.envs._resets import RESET_STRATEGIES, ResetPool, at_most_once, default_reset_strategy
from rollax.envs._vec_env import AUTORESET_MODES, EnvState, VecEnv

__all__ = [
    "AUTORESET_MODES",
    "ENTRY_POINT_GROUP",
    "EnvCheckError",
    "Finding",
    "check_env",
    "check_spaces",
    "RESET_STRATEGIES",
    "ResetPool",
    "EnvParams",
    "EnvSpec",
    "EnvState",
    "Environment",
    "VecEnv",
    "at_most_once",
    "default_reset_strategy",
    "make",
    "register",
    "registered_envs",
    "suite_envs",
    "spec",
]

_BUILTIN = {
    "CartPole-v1": "rollax.envs.classic.cartpole:CartPole",
    "Acrobot-v1": "rollax.envs.classic.acrobot:Acrobot",
    "MountainCar-v0": "rollax.envs.classic.mountain_car:MountainCar",
    "MountainCarContinuous-v0": "rollax.envs.classic.mountain_car:MountainCarContinuous",
    "Pendulum-v1": "rollax.envs.classic.pendulum:Pendulum",
    "Maze-v0": "rollax.envs.maze:Maze",
    "PixelCartPole-v1": "rollax.envs.pixel_cartpole:PixelCartPole",
    "StatelessCartPole-v1": "rollax.envs.memory:StatelessCartPole",
    "RepeatPrevious-v0": "rollax.envs.memory:RepeatPrevious",
    "CountRecall-v0": "rollax.envs.memory:CountRecall",
}
for _env_id, _entry_point in _BUILTIN.items():
    register(_env_id, _entry_point)
register("PixelMaze-v0", "rollax.envs.maze:Maze", pixels=True)
