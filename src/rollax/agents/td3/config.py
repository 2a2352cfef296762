"""TD3's configuration: static sizes and default hyperparameters, each field documented."""

from __future__ import annotations

import dataclasses

from rollax.agents._offpolicy_config import (
    CorrelatedExplorationConfig,
    OffPolicyConfig,
    TwinCriticConfig,
)
from rollax.host import MUJOCO_TASKS
from rollax.training import OPTIMIZER_DATA, check_fields, with_defaults

__all__ = ["PRESETS", "TD3Config"]


@dataclasses.dataclass(frozen=True)
@with_defaults(
    learning_starts=1_000, batch_size=100, learning_rate=1e-3, tau=0.05, max_grad_norm=100.0
)
class TD3Config(TwinCriticConfig, CorrelatedExplorationConfig, OffPolicyConfig):
    """Configuration of a TD3 run (Fujimoto et al., 2018).

    Twin critics whose smaller value is the target, target policy smoothing, and delayed
    actor and target updates.

    The defaults are rejax's settings for Pendulum-v1 (its configs/gymnax/pendulum.yaml).
    With many environments, large batches, ``n_step`` returns and ``critic_layer_norm`` it
    trains in the FastTD3 manner. Noise scales are fractions of each action's half range.
    """

    SWEEPABLE = (*OPTIMIZER_DATA, "gamma", "tau", "exploration_noise", "policy_noise", "noise_clip")

    exploration_noise: float = 0.3
    """Standard deviation of the Gaussian noise added to the actor's actions while it
    explores (after learning_starts, uniform actions before; from the start, and correlated
    over time, with exploration_correlation)."""
    policy_noise: float = 0.2
    """Standard deviation of the noise that smooths the target policy's actions."""
    noise_clip: float = 0.5
    """The smoothing noise is clipped to [-noise_clip, noise_clip]."""
    policy_delay: int = 2
    """Critic steps per actor step; the target networks move with the actor."""
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
        self.validate_exploration()
        if self.num_atoms == 1 or self.num_atoms < 0 or not self.v_min < self.v_max:
            raise ValueError(
                f"TD3Config.num_atoms={self.num_atoms} must be 0 (one value per critic) or at "
                f"least 2, with v_min < v_max (got {self.v_min}, {self.v_max})."
            )


_FASTTD3 = TD3Config(
    num_envs=16, total_steps=98_304, buffer_size=98_304, learning_starts=4_096,
    batch_size=256, gradient_steps=8, learning_rate=3e-4, tau=0.005, exploration_noise=0.1,
    hidden_sizes=(64, 64), activation="relu",
)  # fmt: skip
"""FastTD3's manner at a CPU's scale: 16 environments, 8 gradient steps of 256 per vectorized
step, CleanRL's learning rate, target rate and exploration noise, 64 x 64 networks."""

_PLAYGROUND = _FASTTD3.replace(total_steps=262_144, buffer_size=262_144)
"""MuJoCo Playground's DM Control tasks: :data:`_FASTTD3` over 262,144 steps."""

_MUJOCO = TD3Config(
    total_steps=1_000_000, buffer_size=1_000_000, learning_starts=10_000, batch_size=256,
    learning_rate=1e-3, tau=0.005, exploration_noise=0.1, hidden_sizes=(400, 300),
    activation="relu", normalize_obs=False,
)  # fmt: skip
"""Gymnasium's MuJoCo tasks on the host: rl-zoo's TD3 settings (SB3's defaults)."""

PRESETS: dict[str, TD3Config] = {
    "Pendulum-v1": TD3Config(),
    "MountainCarContinuous-v0": TD3Config(
        total_steps=20_000, buffer_size=20_000, tau=0.01, exploration_noise=0.5,
        exploration_correlation=0.95,
    ),
    "brax/inverted_pendulum": _FASTTD3,
    "playground/CartpoleBalance": _PLAYGROUND,
    "playground/ReacherEasy": _PLAYGROUND,
    **{f"gymnasium/{task}-v5": _MUJOCO for task in MUJOCO_TASKS},
}  # fmt: skip
"""Per-environment defaults: rejax's for Pendulum, correlated noise for MountainCarContinuous,
rl-zoo's for Gymnasium's MuJoCo tasks on the host, FastTD3's manner for the others. What each
reaches: the Agents page, "Presets"."""
