"""Proximal policy optimization: a configuration, presets, a pure loss and an agent."""

from rollax.agents.ppo.agent import LAYOUT, PPO, PPOHyperParams, PPOState, Rollout, make_ppo
from rollax.agents.ppo.config import PRESETS, PPOConfig
from rollax.agents.ppo.losses import PPOLossTerms, ppo_loss
from rollax.agents.ppo.network import PolicyNetwork, feedforward_network

__all__ = [
    "LAYOUT",
    "PPO",
    "PRESETS",
    "PPOConfig",
    "PPOHyperParams",
    "PPOLossTerms",
    "PPOState",
    "PolicyNetwork",
    "Rollout",
    "feedforward_network",
    "make_ppo",
    "ppo_loss",
]
