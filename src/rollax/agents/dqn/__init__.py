"""Deep Q-networks with truncation-correct targets, on the shared off-policy driver.

Feed-forward DQN learns from windows of ``n_step`` transitions; recurrent DQN
(``DQNConfig.recurrent``) from sequences, as R2D2 does (:func:`replay_sequences`,
:func:`sequence_loss`).

``make_dqn`` wires DQN's pieces, module-level functions of a :class:`DQNParts` (its
Q-network, optimizer and gradient step), each callable on one seed's :class:`DQNLearner`.
"""

from rollax.agents.dqn.agent import (
    DQN,
    DQNHyperParams,
    DQNLearner,
    DQNParts,
    dqn_act,
    dqn_explore,
    dqn_hyperparams,
    dqn_learn,
    dqn_loss,
    dqn_q_values,
    dqn_replay,
    dqn_targets,
    dqn_with_budget,
    epsilon,
    epsilon_greedy,
    init_dqn_learner,
    make_dqn,
    window_loss,
    window_targets,
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
    "dqn_act",
    "dqn_explore",
    "dqn_hyperparams",
    "dqn_learn",
    "dqn_loss",
    "dqn_q_values",
    "dqn_replay",
    "dqn_targets",
    "dqn_with_budget",
    "epsilon",
    "epsilon_greedy",
    "init_dqn_learner",
    "make_dqn",
    "replay_sequences",
    "sequence_loss",
    "sequence_priority",
    "sequence_targets",
    "window_loss",
    "window_targets",
]
