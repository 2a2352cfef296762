"""Twin delayed DDPG (TD3): twin critics, target policy smoothing, delayed actor updates.

A configuration and presets, pure targets and losses, and an agent on the off-policy
driver (``n_step`` returns, many environments and large batches, layer normalization in the
critics: the FastTD3 manner).
"""

from rollax.agents.td3.agent import TD3, TD3HyperParams, TD3Learner, make_td3
from rollax.agents.td3.config import PRESETS, TD3Config
from rollax.agents.td3.losses import smoothed_action, td3_actor_loss, td3_target

__all__ = [
    "PRESETS",
    "TD3",
    "TD3Config",
    "TD3HyperParams",
    "TD3Learner",
    "make_td3",
    "smoothed_action",
    "td3_actor_loss",
    "td3_target",
]
