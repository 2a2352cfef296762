"""Parallel Q-learning (PQN): Q(λ) over vectorized rollouts, no replay, no target network.

A configuration and presets, the Q(λ) targets, and an agent on the on-policy driver, with
the Q-network of :mod:`rollax.agents.dqn` (layer normalization in its hidden layers;
feed-forward, or recurrent with ``recurrent="gru"``).
"""

from rollax.agents.pqn.agent import PQN, PQNHyperParams, epsilon, make_pqn, pqn_targets
from rollax.agents.pqn.config import PRESETS, PQNConfig

__all__ = ["PQN", "PRESETS", "PQNConfig", "PQNHyperParams", "epsilon", "make_pqn", "pqn_targets"]
