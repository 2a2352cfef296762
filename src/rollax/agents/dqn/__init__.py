"""Deep Q-networks with truncation-correct targets, on the shared off-policy driver."""

from rollax.agents.dqn.agent import DQN, DQNHyperParams, DQNLearner, make_dqn
from rollax.agents.dqn.config import PRESETS, DQNConfig
from rollax.agents.dqn.losses import next_state_value, q_learning_loss

__all__ = [
    "DQN",
    "PRESETS",
    "DQNConfig",
    "DQNHyperParams",
    "DQNLearner",
    "make_dqn",
    "next_state_value",
    "q_learning_loss",
]
