"""SAC's configuration: static sizes and default hyperparameters, each field documented."""

from __future__ import annotations

import dataclasses

from rollax.agents._offpolicy_config import (
    CorrelatedExplorationConfig,
    OffPolicyConfig,
    TwinCriticConfig,
)
from rollax.host import MUJOCO_TASKS
from rollax.training import OPTIMIZER_DATA, check_fields

__all__ = ["PRESETS", "SACConfig"]


@dataclasses.dataclass(frozen=True)
class SACConfig(TwinCriticConfig, CorrelatedExplorationConfig, OffPolicyConfig):
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


_PLAYGROUND = SACConfig(
    num_envs=16,
    total_steps=262_144,
    buffer_size=262_144,
    learning_starts=4_096,
    batch_size=256,
    gradient_steps=2,
    learning_rate=1e-3,
    gamma=0.99,
    tau=0.005,
    init_alpha=0.1,
    hidden_sizes=(256, 256),
    activation="relu",
)
"""MuJoCo Playground's DM Control tasks at a CPU's batch (PRESETS' docstring says why)."""

_MUJOCO = SACConfig(
    total_steps=1_000_000,
    buffer_size=1_000_000,
    learning_starts=10_000,
    batch_size=256,
    learning_rate=3e-4,
    gamma=0.99,
    tau=0.005,
    hidden_sizes=(256, 256),
    activation="relu",
    normalize_obs=False,
)
"""Gymnasium's MuJoCo tasks on the host: rl-zoo's SAC settings (SB3's defaults with 10,000
random steps first; one environment, one gradient step of 256 per step, automatic entropy)."""

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
    "playground/CartpoleBalance": _PLAYGROUND,
    # Reaching a target: CartpoleBalance's settings on 32 environments instead of 16 (one
    # update of 256 per 16 transitions, as Playground's 128 environments with 8 of 512 make;
    # 16 replayed samples per transition where Playground's make 32): it ties Brax's SAC in
    # under half its wall time (see the Environments page, "Training on Playground").
    "playground/ReacherEasy": _PLAYGROUND.replace(num_envs=32),
    **{f"gymnasium/{task}-v5": _MUJOCO for task in MUJOCO_TASKS},
}
"""Per-environment defaults. Pendulum's are rejax's settings for it. MountainCarContinuous's
explore with correlated noise (0.95): with independent noise the policy learns to stand still.
MuJoCo Playground's CartpoleBalance: Playground's published learning rate, discount and
observation normalization (``brax_sac_config``) and Brax's 256 x 256 ReLU networks (without
the layer normalization Playground gives the critics) at a CPU's batch, 16 environments with
2 gradient steps of 256 each a step (one update per 8 transitions where Playground's 128
environments with 8 steps of 512 make one per 16), and a temperature that starts at 0.1,
which learns faster than from 1.0. PPO's preset balances it in fewer seconds.
ReacherEasy trains with the same settings on twice the environments: half the gradient steps
per transition. The Agents and Environments pages have what each preset reaches."""
