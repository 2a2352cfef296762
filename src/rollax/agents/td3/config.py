"""TD3's configuration: static sizes and default hyperparameters, each field documented."""

from __future__ import annotations

import dataclasses

from rollax.agents._offpolicy_config import OffPolicyConfig
from rollax.training import OPTIMIZER_DATA, with_defaults
from rollax.training._validate import check_fields

__all__ = ["PRESETS", "TD3Config"]


@dataclasses.dataclass(frozen=True)
@with_defaults(
    learning_starts=1_000, batch_size=100, learning_rate=1e-3, tau=0.05, max_grad_norm=100.0
)
class TD3Config(OffPolicyConfig):
    """Configuration of a TD3 run (Fujimoto et al., 2018).

    Twin critics whose smaller value is the target, target policy smoothing, and delayed
    actor and target updates.

    The defaults are rejax's settings for Pendulum-v1 (its configs/gymnax/pendulum.yaml).
    With many environments, large batches, ``n_step`` returns and ``critic_layer_norm`` it
    trains in the FastTD3 manner. Noise scales are fractions of each action's half range.
    """

    SWEEPABLE = (
        *OPTIMIZER_DATA,
        "gamma",
        "tau",
        "exploration_noise",
        "policy_noise",
        "noise_clip",
    )

    exploration_noise: float = 0.3
    """Standard deviation of the Gaussian noise added to the actor's actions while it
    explores (after learning_starts; uniform actions before)."""
    policy_noise: float = 0.2
    """Standard deviation of the noise that smooths the target policy's actions."""
    noise_clip: float = 0.5
    """The smoothing noise is clipped to [-noise_clip, noise_clip]."""
    policy_delay: int = 2
    """Critic steps per actor step; the target networks move with the actor."""
    critic_layer_norm: bool = False
    """Layer normalization in each hidden layer of the critics (FastTD3's)."""
    num_atoms: int = 0
    """Distributional critics (C51, FastTD3's): return distributions over this many atoms
    from v_min to v_max, towards the projected target of the twin expecting less. 0: off."""
    v_min: float = -10.0
    """Distributional critics: the smallest return of the support."""
    v_max: float = 10.0
    """Distributional critics: the largest return of the support."""

    def validate(self) -> None:
        """Raise a ``ValueError`` naming the first inconsistent field and what would work."""
        self.validate_offpolicy()
        check_fields(self, "non_negative", "exploration_noise", "policy_noise", "noise_clip")
        check_fields(self, "positive_int", "policy_delay")
        if self.num_atoms == 1 or self.num_atoms < 0 or not self.v_min < self.v_max:
            raise ValueError(
                f"TD3Config.num_atoms={self.num_atoms} must be 0 (one value per critic) or at "
                f"least 2, with v_min < v_max (got {self.v_min}, {self.v_max})."
            )


PRESETS: dict[str, TD3Config] = {
    "Pendulum-v1": TD3Config(),
}
"""Per-environment defaults. Pendulum's are rejax's settings for it."""
