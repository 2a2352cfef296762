"""The configuration every off-policy agent shares, each field documented.

DQN's, SAC's and TD3's, and what the agents of continuous actions add to it (correlated
exploration, their twin critics' normalization).

An off-policy configuration derives from :class:`OffPolicyConfig` and adds its own fields;
where its defaults differ, :func:`rollax.training.with_defaults` sets them without declaring
the fields again, so each field has one declaration and one docstring (the command line's
``--help``).
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

from rollax.networks import Activation
from rollax.training import (
    OptimizerConfig,
    ScaleConfig,
    check_activation,
    check_budget,
    check_fields,
    check_replay,
    check_widths,
    with_defaults,
)

__all__ = ["CorrelatedExplorationConfig", "OffPolicyConfig", "TwinCriticConfig"]

C = TypeVar("C")


@dataclasses.dataclass(frozen=True)
@with_defaults(learning_rate=1e-2)
class OffPolicyConfig(OptimizerConfig, ScaleConfig):
    """What every off-policy configuration has: environments, budget, replay, learning.

    Sizes and switches are static (changing them compiles again). The hyperparameters are
    only defaults: the agent copies them into the training state, where they are data and
    may differ per seed.
    """

    num_envs: int = 1
    """Environments stepped in parallel per seed."""
    total_steps: int = 10_000
    """Environment steps (transitions) per seed, which schedules span (DQN's exploration); a
    multiple of num_envs * train_every."""
    buffer_size: int = 10_000
    """Transitions per seed the replay buffer holds (a multiple of num_envs)."""
    learning_starts: int = 256
    """Transitions per seed stored before the first gradient step (SAC and TD3 act uniformly
    in their action box until then, unless they explore with correlated noise)."""
    batch_size: int = 256
    """Transitions (n-step windows) per gradient step."""
    train_every: int = 1
    """Vectorized steps (num_envs transitions each) between learning phases."""
    gradient_steps: int = 1
    """Gradient steps in each learning phase."""
    gamma: float = 0.99
    """Discount factor."""
    n_step: int = 1
    """Transitions summed into each target before bootstrapping (1: one-step targets). Sums
    stop at a termination and bootstrap a truncation from its true final observation."""
    tau: float = 0.02
    """Weight of the online network in each target update (Polyak averaging; 1.0 copies), in
    (0, 1]."""
    hidden_sizes: tuple[int, ...] = (64, 64)
    """Widths of the hidden layers of each network."""
    activation: Activation = "swish"
    """Activation of the hidden layers."""
    encoder_layer_norm: bool = False
    """Dict observations: per-channel layer normalization in the CNN encoders."""
    normalize_obs: bool = True
    """Normalize observations with running statistics kept in the training state."""
    compact_replay: bool = False
    """Store each observation once in the replay buffer (``next_obs`` read from the next
    step, final observations at episode ends kept on the side): about half the memory for
    image observations, the same samples while episodes average at least 64 steps (shorter
    ones can push out the oldest episode ends, which are then not sampled; see
    :class:`rollax.buffers.SequenceBuffer`)."""
    checkpoint_buffer: bool = True
    """Keep the replay buffer in checkpoints, so resuming is bit-identical. Off (for buffers
    too large to save): checkpoints leave it out, and a resumed run refills it before
    learning goes on; it is then not bit-identical to a run that never stopped."""

    @property
    def steps_per_iteration(self) -> int:
        """Transitions per seed between learning phases: num_envs * train_every."""
        return self.num_envs * self.train_every

    def gradient_steps_in(self, total_steps: int) -> int:
        """Gradient steps per seed in a budget of ``total_steps`` transitions.

        What the learning-rate schedule spans: gradient_steps in every learning phase, from
        the first with learning_starts transitions stored.
        """
        phases = total_steps // self.steps_per_iteration
        first = max(1, -(-self.learning_starts // self.steps_per_iteration))
        return max(0, phases - first + 1) * self.gradient_steps

    @property
    def replay_length(self) -> int:
        """Consecutive transitions in each window sampled from replay: n_step."""
        return self.n_step

    def validate_offpolicy(self) -> None:
        """Check the shared fields; raise a ``ValueError`` naming the first bad one."""
        if self.num_shards is None:  # checked as the devices will split it
            return self.with_shards().validate_offpolicy()
        check_fields(
            self, "positive_int", "num_envs", "total_steps", "buffer_size", "batch_size",
            "train_every", "gradient_steps", "n_step",
        )  # fmt: skip
        check_fields(self, "non_negative_int", "learning_starts")
        self.validate_optimizer()
        check_fields(self, "unit_interval", "gamma")
        # tau = 0 would freeze the target networks at their initial values for good.
        check_fields(self, "positive_fraction", "tau")
        check_activation(self)
        check_widths(self)
        check_budget(
            self.total_steps,
            self.steps_per_iteration,
            f"{type(self).__name__}.total_steps",
            "vectorized steps of num_envs * train_every",
        )
        check_replay(self)
        self.validate_scale(("num_envs", "batch_size"))

    def replace(self: C, **changes: Any) -> C:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]


@dataclasses.dataclass(frozen=True)
class CorrelatedExplorationConfig:
    """Exploration that persists over time, for the agents of continuous actions (SAC, TD3)."""

    exploration_correlation: float = 0.0
    """Correlation of the exploration noise between successive steps of an environment, in
    [0, 1). 0 is the standard: independent draws, and uniform actions until learning_starts.
    Above 0 the agent's policy acts from the start, its noise an AR(1) process with a
    standard normal marginal (red noise): each step's noise has the usual distribution (SAC's
    policy's own, TD3's Gaussian of exploration_noise), but successive draws are correlated,
    so exploration persists, which sparse long-horizon tasks (MountainCarContinuous) need.
    The noise is part of the training state: a resumed run goes on with it."""

    def validate_exploration(self) -> None:
        """Raise a ``ValueError`` unless ``exploration_correlation`` lies in [0, 1)."""
        if not 0.0 <= self.exploration_correlation < 1.0:
            raise ValueError(
                f"{type(self).__name__}.exploration_correlation="
                f"{self.exploration_correlation!r} must lie in [0, 1) (0: independent noise; "
                "0.9-0.99: persistent exploration)"
            )


@dataclasses.dataclass(frozen=True)
class TwinCriticConfig:
    """The twin critics of the agents of continuous actions (SAC, TD3)."""

    critic_layer_norm: bool = False
    """Layer normalization in each hidden layer of the critics, before its activation (Brax's
    SAC as MuJoCo Playground trains it, FastTD3's). The actor is left as it is."""
