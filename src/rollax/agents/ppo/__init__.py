"""Proximal policy optimization: a configuration, a trainer that compiles once, presets."""

from rollax.agents.ppo.config import PRESETS, PPOConfig
from rollax.agents.ppo.trainer import (
    PPOHyperParams,
    PPOState,
    Rollout,
    Trainer,
    make_trainer,
)

__all__ = [
    "PRESETS",
    "PPOConfig",
    "PPOHyperParams",
    "PPOState",
    "Rollout",
    "Trainer",
    "make_trainer",
]
