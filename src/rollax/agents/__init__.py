"""The agents, each registered with the training layer under its name.

Two drivers hold what agents of a kind share. The on-policy one (PPO, PQN) owns rollouts,
the epochs of minibatches over them and their bootstraps: an algorithm gives it an
:class:`OnPolicyLearner` and :func:`build_onpolicy_agent` does the rest, with the fields of
:class:`OnPolicyConfig`. The off-policy one (DQN, SAC, TD3) owns acting into a replay buffer
and learning from it: an algorithm gives :func:`build_offpolicy_agent` an
:class:`OffPolicyLearner`, with the fields of :class:`OffPolicyConfig`.
:func:`with_defaults` gives a configuration subclass its own defaults for the fields it
inherits.
"""

from rollax.agents import dqn, ppo, pqn, sac, td3
from rollax.agents._offpolicy import OffPolicyLearner, OffPolicyState, build_offpolicy_agent
from rollax.agents._offpolicy_config import (
    CorrelatedExplorationConfig,
    OffPolicyConfig,
    TwinCriticConfig,
)
from rollax.agents._onpolicy import (
    OnPolicyAgent,
    OnPolicyLearner,
    OnPolicyState,
    Rollout,
    build_onpolicy_agent,
)
from rollax.agents._onpolicy_config import OnPolicyConfig
from rollax.training import with_defaults
from rollax.training._registry import Algorithm, register

__all__ = [
    "CorrelatedExplorationConfig",
    "OffPolicyConfig",
    "OffPolicyLearner",
    "OffPolicyState",
    "OnPolicyAgent",
    "OnPolicyConfig",
    "OnPolicyLearner",
    "OnPolicyState",
    "Rollout",
    "TwinCriticConfig",
    "build_offpolicy_agent",
    "build_onpolicy_agent",
    "dqn",
    "ppo",
    "pqn",
    "sac",
    "td3",
    "with_defaults",
]

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
        name="pqn",
        title="Parallel Q-learning (Q(lambda), LayerNorm, no replay)",
        config_type=pqn.PQNConfig,
        make=pqn.make_pqn,
        presets=pqn.PRESETS,
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
register(
    Algorithm(
        name="td3",
        title="Twin Delayed DDPG (clipped double-Q, target smoothing, delayed actor)",
        config_type=td3.TD3Config,
        make=td3.make_td3,
        presets=td3.PRESETS,
    )
)
