"""Proximal policy optimization, feed-forward or recurrent.

A configuration, presets, a pure loss, minibatches and their replay, and an agent.
"""

from rollax.agents._minibatches import (
    Sequences,
    replay,
    rollout_sequences,
    shuffled_samples,
    shuffled_sequences,
)
from rollax.agents.ppo.agent import LAYOUT, PPO, PPOHyperParams, PPOState, Rollout, make_ppo
from rollax.agents.ppo.config import PRESETS, PPOConfig
from rollax.agents.ppo.losses import PPOLossTerms, ppo_loss
from rollax.agents.ppo.network import actor_critic, network_for

__all__ = [
    "LAYOUT",
    "PPO",
    "PRESETS",
    "PPOConfig",
    "PPOHyperParams",
    "PPOLossTerms",
    "PPOState",
    "Rollout",
    "Sequences",
    "actor_critic",
    "make_ppo",
    "network_for",
    "ppo_loss",
    "replay",
    "rollout_sequences",
    "shuffled_samples",
    "shuffled_sequences",
]
