"""Twin delayed DDPG (TD3) on the off-policy driver: config, presets, losses, agent.

``make_td3`` wires TD3's pieces, the methods of a :class:`TD3Parts`.
"""

from rollax.agents.td3.agent import TD3, TD3HyperParams, TD3Learner, TD3Parts, make_td3
from rollax.agents.td3.config import PRESETS, TD3Config
from rollax.agents.td3.losses import smoothed_action, td3_actor_loss, td3_target

__all__ = [
    "PRESETS",
    "TD3",
    "TD3Config",
    "TD3HyperParams",
    "TD3Learner",
    "TD3Parts",
    "make_td3",
    "smoothed_action",
    "td3_actor_loss",
    "td3_target",
]
