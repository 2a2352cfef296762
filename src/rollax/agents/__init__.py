"""The agents: PPO, PQN, DQN, SAC and TD3, each registered by name in :mod:`rollax.runs`.

Two drivers hold what agents of a kind share. The on-policy one (PPO, PQN) owns rollouts,
the epochs of minibatches over them and their bootstraps: an algorithm gives it an
:class:`OnPolicyLearner` and :func:`build_onpolicy_agent` does the rest, with the fields of
:class:`OnPolicyConfig`; its pieces (a rollout, an update, the iteration that composes them)
are functions of :mod:`rollax.agents.onpolicy`, each callable on its own. The off-policy one
(DQN, SAC, TD3) owns acting into a replay buffer and learning from it: an algorithm gives
:func:`build_offpolicy_agent` an :class:`OffPolicyLearner`, with the fields of
:class:`OffPolicyConfig`; its pieces (acting and storing, learning from the replay, the
iteration) are functions of :mod:`rollax.agents.offpolicy`. Both speak one vocabulary: a
learner's ``explore`` chooses the actions a run collects with, its ``act`` evaluation's
(greedy when deterministic), and what exploration carries between steps is
``OffPolicyState.exploration``. The losses several agents learn with are
:mod:`rollax.agents.losses`. :func:`with_defaults` gives a configuration subclass its own
defaults for the fields it inherits.
"""

from rollax.agents import dqn, losses, offpolicy, onpolicy, ppo, pqn, sac, td3
from rollax.agents._box import BoxParts, box_learner
from rollax.agents._offpolicy import (
    OffPolicyDriver,
    OffPolicyLearner,
    OffPolicyState,
    build_offpolicy_agent,
)
from rollax.agents._offpolicy_config import (
    CorrelatedExplorationConfig,
    OffPolicyConfig,
    TwinCriticConfig,
)
from rollax.agents._onpolicy import (
    OnPolicyAgent,
    OnPolicyDriver,
    OnPolicyLearner,
    OnPolicyState,
    Rollout,
    build_onpolicy_agent,
)
from rollax.agents._onpolicy_config import OnPolicyConfig
from rollax.training import with_defaults

__all__ = [
    "BoxParts",
    "CorrelatedExplorationConfig",
    "OffPolicyConfig",
    "OffPolicyDriver",
    "OffPolicyLearner",
    "OffPolicyState",
    "OnPolicyAgent",
    "OnPolicyConfig",
    "OnPolicyDriver",
    "OnPolicyLearner",
    "OnPolicyState",
    "Rollout",
    "TwinCriticConfig",
    "box_learner",
    "build_offpolicy_agent",
    "build_onpolicy_agent",
    "dqn",
    "losses",
    "offpolicy",
    "onpolicy",
    "ppo",
    "pqn",
    "sac",
    "td3",
    "with_defaults",
]
