"""The agents, each registered with the training layer under its name."""

from rollax.agents.ppo import PRESETS as PPO_PRESETS
from rollax.agents.ppo import PPOConfig, make_ppo
from rollax.training._registry import Algorithm, register

register(
    Algorithm(
        name="ppo",
        title="Proximal Policy Optimization",
        config_type=PPOConfig,
        make=make_ppo,
        presets=PPO_PRESETS,
    )
)

__all__: list[str] = []
