"""The configuration every on-policy agent shares (PPO's and PQN's), each field documented.

An on-policy configuration derives from :class:`OnPolicyConfig` and adds its own fields;
where its defaults differ, :func:`rollax.training.with_defaults` sets them without declaring
the fields again, so each field has one declaration and one docstring (the command line's
``--help``).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal, TypeVar

from rollax.networks import CELLS, Activation
from rollax.training import (
    OptimizerConfig,
    ScaleConfig,
    check_activation,
    check_budget,
    check_fields,
    check_widths,
)

__all__ = ["OnPolicyConfig"]

C = TypeVar("C")


@dataclasses.dataclass(frozen=True)
class OnPolicyConfig(OptimizerConfig, ScaleConfig):
    """What every on-policy configuration has: rollouts, their epochs, the network's shape.

    Sizes and switches are static (changing them compiles again). The hyperparameters are
    only defaults: the agent copies them into the training state, where they are data and
    may differ per seed.
    """

    num_envs: int = 8
    """Environments stepped in parallel per seed."""
    num_steps: int = 64
    """Steps per environment in each rollout; a rollout holds num_envs * num_steps transitions."""
    total_steps: int = 131_072
    """Environment steps per seed that the schedules span; a multiple of num_envs *
    num_steps."""
    num_epochs: int = 4
    """Passes over each rollout during an update."""
    num_minibatches: int = 4
    """Minibatches per epoch; must divide num_envs * num_steps."""
    gamma: float = 0.99
    """Discount factor."""
    normalize_obs: bool = False
    """Normalize observations with running statistics kept in the training state (off for
    CartPole, whose observations are already of order one and whose late, narrow state
    distribution would keep moving the statistics under a converged policy)."""
    hidden_sizes: tuple[int, ...] = (64, 64)
    """Widths of the hidden layers of each network. Empty for a feed-forward network: the
    heads read the features directly (for images, the CNN's dense layer: CleanRL's Atari
    network)."""
    activation: Activation = "tanh"
    """Activation of the hidden layers: tanh, relu, gelu or swish."""
    encoder_layer_norm: bool = False
    """Dict observations: per-channel layer normalization in the CNN encoders."""
    image_encoder: Literal["cnn", "flatten"] = "cnn"
    """Dict observations: ``"cnn"`` encodes each image with a CNN (PPO's actor and critic
    share it); ``"flatten"`` feeds each image, scaled to [0, 1] and flattened, straight into
    the MLPs (PPO's actor and critic then share nothing): for small boards such as MinAtar's
    10x10."""
    augment_pixels: bool = False
    """Randomly shift the images of each update minibatch by up to shift_pad pixels (DrQ)."""
    shift_pad: int = 4
    """Largest shift of augment_pixels, in pixels."""
    frame_stack: int = 1
    """Observe the last frame_stack observations stacked on the last axis (rollax.make's
    option; applied when the trainer builds the environment from its id). 1: off."""
    action_repeat: int = 1
    """Repeat each action this many dynamics steps, rendering once (rollax.make's option;
    applied when the trainer builds the environment from its id). Episodes keep their length
    in dynamics steps; total_steps and num_steps count agent steps. 1: off."""
    recurrent: Literal["none", "gru", "lstm"] = "none"
    """A recurrent cell between the encoder (an MLP of hidden_sizes, after the image
    encoders for dict observations) and the heads: gru or lstm. Its carry resets at every
    episode start. none: a feed-forward network."""
    cell_size: int = 128
    """Recurrent: features of the cell's state."""
    chunk_length: int = 0
    """Recurrent: the loss replays contiguous chunks of this many steps of one environment,
    each from the carry stored at its start (divides num_steps). 0: whole rollouts of
    num_steps."""
    burn_in: int = 0
    """Recurrent: steps before each chunk replayed without gradient to refresh its start
    carry under the current parameters (0: none; a chunk at the rollout's start uses the
    stored carry)."""

    @property
    def batch_size(self) -> int:
        """Transitions per rollout per seed: num_envs * num_steps."""
        return self.num_envs * self.num_steps

    @property
    def steps_per_iteration(self) -> int:
        """Environment steps per seed of one iteration (a rollout and its update): batch_size."""
        return self.batch_size

    @property
    def updates_in_budget(self) -> int:
        """Updates (one per rollout) in total_steps: what the schedules span."""
        return self.total_steps // self.batch_size

    @property
    def sequences_per_shard(self) -> int:
        """Recurrent: sequences a shard's rollout is cut into for the loss."""
        return (
            self.num_envs
            // self.num_shards
            * (self.num_steps // (self.chunk_length or self.num_steps))
        )

    def validate_onpolicy(self) -> None:
        """Check the shared fields; raise a ``ValueError`` naming the first bad one."""
        if self.num_shards is None:  # checked as the devices will split it
            return self.with_shards().validate_onpolicy()
        check_fields(
            self, "positive_int", "num_envs", "num_steps", "total_steps", "num_epochs",
            "num_minibatches", "frame_stack", "action_repeat",
        )  # fmt: skip
        self.validate_scale(("num_envs",))
        self.validate_optimizer()
        check_fields(self, "unit_interval", "gamma")
        if self.image_encoder not in ("cnn", "flatten"):
            raise ValueError(
                f"{type(self).__name__}.image_encoder must be 'cnn' or 'flatten', got "
                f"{self.image_encoder!r}."
            )
        self._validate_recurrent()
        name = type(self).__name__
        shard_batch = self.batch_size // self.num_shards
        if self.recurrent == "none" and shard_batch % self.num_minibatches:
            divisors = [d for d in range(1, min(shard_batch, 64) + 1) if shard_batch % d == 0]
            per_shard = " per shard" if self.num_shards > 1 else ""
            raise ValueError(
                f"{name}.num_minibatches={self.num_minibatches} must divide the rollout "
                f"size{per_shard} num_envs * num_steps"
                f"{' / num_shards' if self.num_shards > 1 else ''} = {shard_batch}; valid "
                f"values include {divisors}."
            )
        check_budget(
            self.total_steps,
            self.batch_size,
            f"{name}.total_steps",
            "rollouts of num_envs * num_steps",
        )
        check_activation(self)
        check_fields(self, "non_negative_int", "shift_pad")
        check_widths(self, allow_empty=self.recurrent == "none")

    def _validate_recurrent(self) -> None:
        name = type(self).__name__
        if self.recurrent not in ("none", *CELLS):
            raise ValueError(
                f"{name}.recurrent must be 'none', 'gru' or 'lstm', got {self.recurrent!r}."
            )
        check_fields(self, "positive_int", "cell_size")
        check_fields(self, "non_negative_int", "chunk_length", "burn_in")
        if self.recurrent == "none":
            return
        if self.chunk_length and self.num_steps % self.chunk_length:
            divisors = [d for d in range(1, self.num_steps + 1) if self.num_steps % d == 0]
            raise ValueError(
                f"{name}.chunk_length={self.chunk_length} must divide num_steps="
                f"{self.num_steps} (or be 0 for whole rollouts); valid values include "
                f"{divisors[-8:]}."
            )
        if self.burn_in >= self.num_steps:
            raise ValueError(
                f"{name}.burn_in={self.burn_in} must be below num_steps={self.num_steps}."
            )
        sequences = self.sequences_per_shard
        if sequences % self.num_minibatches:
            divisors = [d for d in range(1, sequences + 1) if sequences % d == 0]
            raise ValueError(
                f"{name}.num_minibatches={self.num_minibatches} must divide the sequences "
                f"of a shard's rollout, num_envs / num_shards * num_steps / chunk_length = "
                f"{sequences} (the recurrent loss replays whole sequences); valid values "
                f"include {divisors[:8]}."
            )

    def replace(self: C, **changes: Any) -> C:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]
