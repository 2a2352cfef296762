"""The environment API, the registry and the builtin environments."""

from rollax.envs._base import Environment, EnvParams
from rollax.envs._registry import EnvSpec, make, register, registered_envs, spec
from rollax.envs._vec_env import AUTORESET_MODES, RESET_STRATEGIES, EnvState, VecEnv

__all__ = [
    "AUTORESET_MODES",
    "RESET_STRATEGIES",
    "EnvParams",
    "EnvSpec",
    "EnvState",
    "Environment",
    "VecEnv",
    "make",
    "register",
    "registered_envs",
    "spec",
]

_CLASSIC = {
    "CartPole-v1": "rollax.envs.classic.cartpole:CartPole",
    "Acrobot-v1": "rollax.envs.classic.acrobot:Acrobot",
    "MountainCar-v0": "rollax.envs.classic.mountain_car:MountainCar",
    "MountainCarContinuous-v0": "rollax.envs.classic.mountain_car:MountainCarContinuous",
    "Pendulum-v1": "rollax.envs.classic.pendulum:Pendulum",
}
for _env_id, _entry_point in _CLASSIC.items():
    register(_env_id, _entry_point)
