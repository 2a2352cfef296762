"""The agents, each registered with the training layer under its name.

:class:`OffPolicyConfig` holds the fields every off-policy configuration (DQN's, SAC's)
shares; :func:`with_defaults` gives a subclass its own defaults for them.
"""

from rollax.agents import dqn, ppo, sac
from rollax.agents._offpolicy_config import OffPolicyConfig
from rollax.training import with_defaults
from rollax.training._registry import Algorithm, register

__all__ = ["OffPolicyConfig", "dqn", "ppo", "sac", "with_defaults"]

register(
    Algorithm(
        name="ppo",
        title="Proximal Policy Optimization",
        config_type=ppo.PPOConfig,
        make=ppo.make_ppo,
        presets=ppo.PRESETS,
    )
)
register(
    Algorithm(
        name="dqn",
        title="Deep Q-Network (double, dueling, n-step)",
        config_type=dqn.DQNConfig,
        make=dqn.make_dqn,
        presets=dqn.PRESETS,
    )
)
register(
    Algorithm(
        name="sac",
        title="Soft Actor-Critic (twin critics, automatic entropy tuning)",
        config_type=sac.SACConfig,
        make=sac.make_sac,
        presets=sac.PRESETS,
    )
)

__all__: list[str] = []
