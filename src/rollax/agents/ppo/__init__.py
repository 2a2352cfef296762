"""Proximal policy optimization: a configuration, presets, a pure loss and an agent."""

from rollax.agents.ppo.agent import PPO, PPOHyperParams, PPOState, Rollout, make_ppo
from rollax.agents.ppo.config import PRESETS, PPOConfig
from rollax.agents.ppo.losses import PPOLossTerms, ppo_loss

__all__ = [
    "PPO",
    "PRESETS",
    "PPOConfig",
    "PPOHyperParams",
    "PPOLossTerms",
    "PPOState",
    "Rollout",
    "make_ppo",
    "ppo_loss",
]
