"""Deep Q-networks with truncation-correct targets, on the shared off-policy driver.

Feed-forward DQN learns from windows of ``n_step`` transitions; recurrent DQN
(``DQNConfig.recurrent``) from sequences, as R2D2 does (:func:`replay_sequences`,
:func:`sequence_loss`).
"""

from rollax.agents.dqn.agent import DQN, DQNHyperParams, DQNLearner, make_dqn
from rollax.agents.dqn.config import PRESETS, DQNConfig
from rollax.agents.dqn.losses import next_state_value, q_learning_loss, sequence_priority
from rollax.agents.dqn.network import QFunction, Unrolled, feedforward_q, q_function, recurrent_q
from rollax.agents.dqn.sequences import (
    SequenceReplay,
    replay_sequences,
    sequence_loss,
    sequence_targets,
)

__all__ = [
    "DQN",
    "PRESETS",
    "DQNConfig",
    "DQNHyperParams",
    "DQNLearner",
    "QFunction",
    "SequenceReplay",
    "Unrolled",
    "feedforward_q",
    "make_dqn",
    "next_state_value",
    "q_function",
    "q_learning_loss",
    "recurrent_q",
    "replay_sequences",
    "sequence_loss",
    "sequence_priority",
    "sequence_targets",
]
