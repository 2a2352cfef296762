"""Deep Q-networks with truncation-correct targets, on the shared off-policy driver.

Feed-forward DQN learns from windows of ``n_step`` transitions; recurrent DQN
(``DQNConfig.recurrent``) from sequences, as R2D2 does (:func:`replay_sequences`,
:func:`sequence_loss`).

``make_dqn`` wires DQN's pieces, the methods of a :class:`DQNParts` (its Q-network,
optimizer and gradient step), each callable on one seed's :class:`DQNLearner`.
"""

from rollax.agents.dqn.agent import (
    DQN,
    DQNHyperParams,
    DQNLearner,
    DQNParts,
    dqn_hyperparams,
    epsilon,
    make_dqn,
)
from rollax.agents.dqn.config import PRESETS, DQNConfig
from rollax.agents.dqn.losses import sequence_priority
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
    "DQNParts",
    "SequenceReplay",
    "dqn_hyperparams",
    "epsilon",
    "make_dqn",
    "replay_sequences",
    "sequence_loss",
    "sequence_priority",
    "sequence_targets",
]
