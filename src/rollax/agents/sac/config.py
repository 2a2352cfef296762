"""SAC's configuration: static sizes and default hyperparameters, each field documented."""

from __future__ import annotations

import dataclasses

from rollax.agents._offpolicy_config import CorrelatedExplorationConfig, OffPolicyConfig
from rollax.training import OPTIMIZER_DATA
from rollax.training._validate import check_fields

__all__ = ["PRESETS", "SACConfig"]


@dataclasses.dataclass(frozen=True)
class SACConfig(CorrelatedExplorationConfig, OffPolicyConfig):
    """Configuration of a soft actor-critic run (twin critics, automatic entropy tuning).

    The defaults are rejax's settings for Pendulum-v1 (its configs/gymnax/pendulum.yaml),
    which are :class:`rollax.agents.OffPolicyConfig`'s own. The critics' targets move by
    ``tau`` every gradient step.
    """

    SWEEPABLE = (*OPTIMIZER_DATA, "gamma", "tau", "target_entropy_scale")

    init_alpha: float = 1.0
    """Entropy temperature at the start."""
    autotune_alpha: bool = True
    """Tune the temperature so the policy's entropy tracks target_entropy."""
    target_entropy_scale: float = 1.0
    """The target entropy is -target_entropy_scale * action dimensions."""

    def validate(self) -> None:
        """Raise a ``ValueError`` naming the first inconsistent field and what would work."""
        self.validate_offpolicy()
        check_fields(self, "positive", "init_alpha")
        check_fields(self, "non_negative", "target_entropy_scale")
        self.validate_exploration()


PRESETS: dict[str, SACConfig] = {
    "Pendulum-v1": SACConfig(),
    "MountainCarContinuous-v0": SACConfig(
        total_steps=50_000,
        buffer_size=50_000,
        learning_starts=1_000,
        learning_rate=3e-4,
        gamma=0.99,
        tau=0.01,
        init_alpha=0.1,
        hidden_sizes=(64, 64),
        exploration_correlation=0.95,
    ),
}
"""Per-environment defaults. Pendulum's are rejax's settings for it (about -160 after 10k
steps). MountainCarContinuous's explore with correlated noise (0.95): 94 on 2 of 2 seeds
after 10k steps, stable to 50k; with independent noise the policy learns to stand still
(return about 0)."""
