"""DQN's configuration: static sizes and default hyperparameters, each field documented."""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

from rollax.networks import Activation
from rollax.training import ScaleConfig, check_budget
from rollax.training._validate import (
    check_activation,
    check_fields,
    check_replay,
    check_widths,
)

__all__ = ["PRESETS", "DQNConfig"]


@dataclasses.dataclass(frozen=True)
class DQNConfig(ScaleConfig):
    """Configuration of a DQN training run (double, dueling, n-step, prioritized options).

    The defaults are rejax's settings for CartPole-v1 (its configs/gymnax/cartpole.yaml).

    Sizes and switches are static (changing them compiles again). The hyperparameters
    (learning rate, discount, target smoothing, exploration, importance exponent) are only
    defaults: the agent copies them into the training state, where they are data and may
    differ per seed.
    """

    num_envs: int = 10
    """Environments stepped in parallel per seed."""
    total_steps: int = 100_000
    """Environment steps (transitions) per seed that the exploration schedule spans; a
    multiple of num_envs * train_every."""
    buffer_size: int = 50_000
    """Transitions per seed the replay buffer holds (a multiple of num_envs)."""
    learning_starts: int = 5_000
    """Transitions per seed stored before the first gradient step."""
    batch_size: int = 100
    """Transitions (n-step windows) per gradient step."""
    train_every: int = 1
    """Vectorized steps (num_envs transitions each) between learning phases."""
    gradient_steps: int = 5
    """Gradient steps in each learning phase."""
    learning_rate: float = 1e-3
    """Adam's learning rate."""
    gamma: float = 0.99
    """Discount factor."""
    n_step: int = 1
    """Transitions summed into each target before bootstrapping (1: one-step targets). Sums
    stop at a termination and bootstrap a truncation from its true final observation."""
    double_q: bool = True
    """Double DQN: the online network picks the next action, the target network values it."""
    dueling: bool = True
    """Dueling head: separate state-value and advantage streams."""
    tau: float = 0.02
    """Weight of the online network in each target update (Polyak averaging; 1.0 copies)."""
    target_update_every: int = 5
    """Gradient steps between target updates (with tau=1.0: periodic hard copies). The
    default updates once per learning phase of gradient_steps=5, as rejax does."""
    exploration_start: float = 1.0
    """Epsilon of the epsilon-greedy policy at the start."""
    exploration_end: float = 0.05
    """Epsilon after the schedule."""
    exploration_fraction: float = 0.5
    """Fraction of total_steps over which epsilon decays linearly."""
    loss: Literal["huber", "mse"] = "mse"
    """TD loss: half the squared error, or Huber's (delta 1)."""
    clip_grad_value: float = 10.0
    """Each gradient element is clipped to [-clip_grad_value, clip_grad_value] (0: off)."""
    max_grad_norm: float = 0.0
    """Gradients are rescaled to at most this global norm (0: off)."""
    compact_replay: bool = False
    """Store each observation once in the replay buffer (``next_obs`` read from the next
    step, final observations at episode ends kept on the side): about half the memory for
    image observations, the same samples while episodes average at least 64 steps (shorter
    ones can push out the oldest episode ends, which are then not sampled; see
    :class:`rollax.buffers.SequenceBuffer`)."""
    prioritized: bool = False
    """Prioritized replay: windows drawn in proportion to their TD error ** priority_exponent,
    with importance weights."""
    priority_exponent: float = 0.6
    """Prioritized replay's alpha."""
    importance_exponent: float = 0.4
    """Prioritized replay's beta: how much the importance weights correct the sampling."""
    hidden_sizes: tuple[int, ...] = (64, 64)
    """Widths of the Q-network's hidden layers."""
    activation: Activation = "swish"
    """Activation of the hidden layers."""
    encoder_layer_norm: bool = False
    """Dict observations: per-channel layer normalization in the CNN encoders."""
    normalize_obs: bool = False
    """Normalize observations with running statistics kept in the training state."""
    checkpoint_buffer: bool = True
    """Keep the replay buffer in checkpoints, so resuming is bit-identical. Off (for buffers
    too large to save): checkpoints leave it out, and a resumed run refills it before
    learning goes on; it is then not bit-identical to a run that never stopped."""

    @property
    def steps_per_iteration(self) -> int:
        """Transitions per seed between learning phases: num_envs * train_every."""
        return self.num_envs * self.train_every

    def validate(self) -> None:
        """Raise a ``ValueError`` naming the first inconsistent field and what would work."""
        check_fields(
            self, "positive_int", "num_envs", "total_steps", "buffer_size", "batch_size",
            "train_every", "gradient_steps", "n_step", "target_update_every",
        )  # fmt: skip
        check_fields(self, "non_negative_int", "learning_starts")
        check_fields(self, "positive", "learning_rate", "exploration_fraction")
        check_fields(self, "unit_interval", "gamma", "tau", "exploration_start",
                     "exploration_end", "exploration_fraction", "importance_exponent")  # fmt: skip
        check_fields(self, "non_negative", "clip_grad_value", "max_grad_norm", "priority_exponent")
        if self.loss not in ("huber", "mse"):
            raise ValueError(f"DQNConfig.loss must be 'huber' or 'mse', got {self.loss!r}.")
        check_activation(self)
        check_widths(self)
        check_budget(
            self.total_steps,
            self.steps_per_iteration,
            "DQNConfig.total_steps",
            "vectorized steps of num_envs * train_every",
        )
        check_replay(self)
        self.validate_scale(("num_envs", "batch_size"))

    def replace(self, **changes: Any) -> DQNConfig:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)


PRESETS: dict[str, DQNConfig] = {
    "CartPole-v1": DQNConfig(),
    "gymnax/Breakout-MinAtar": DQNConfig(
        num_envs=16,
        total_steps=1_048_576,
        buffer_size=100_000 - 100_000 % 16,
        learning_starts=10_000,
        batch_size=64,
        gradient_steps=1,
        train_every=1,
        learning_rate=2.5e-4,
        tau=1.0,
        target_update_every=250,
        exploration_fraction=0.25,
        exploration_end=0.01,
        hidden_sizes=(128,),
        activation="relu",
        loss="huber",
        clip_grad_value=0.0,
        max_grad_norm=10.0,
        compact_replay=True,
    ),
}
"""Per-environment defaults. CartPole's are rejax's settings for it (its
configs/gymnax/cartpole.yaml)."""
