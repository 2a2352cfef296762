"""Twin delayed DDPG (TD3) on the off-policy driver: config, presets, losses, agent.

``make_td3`` wires TD3's pieces, module-level functions of a :class:`TD3Parts` (its networks,
action box and optimizer), each callable on one seed's :class:`TD3Learner`.
"""

from rollax.agents.td3.agent import (
    TD3,
    TD3HyperParams,
    TD3Learner,
    TD3Parts,
    init_td3_learner,
    make_td3,
    moved_action,
    noisy_action,
    td3_act,
    td3_hyperparams,
    td3_learn,
)
from rollax.agents.td3.config import PRESETS, TD3Config
from rollax.agents.td3.losses import smoothed_action, td3_actor_loss, td3_target

__all__ = [
    "PRESETS",
    "TD3",
    "TD3Config",
    "TD3HyperParams",
    "TD3Learner",
    "TD3Parts",
    "init_td3_learner",
    "make_td3",
    "moved_action",
    "noisy_action",
    "smoothed_action",
    "td3_act",
    "td3_actor_loss",
    "td3_hyperparams",
    "td3_learn",
    "td3_target",
]
