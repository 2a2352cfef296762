"""Recurrent networks: an encoder, a GRU or LSTM cell, then actor-critic or Q-value heads."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import flax.linen as nn
import jax
import jax.numpy as jnp

from rollax.networks._actor_critic import MLP, heads
from rollax.networks._q import q_head
from rollax.networks._vision import image_encoders, join_features

__all__ = [
    "CELLS",
    "Cell",
    "RecurrentActorCritic",
    "RecurrentQNetwork",
    "initial_carry",
    "reset_carry",
    "run_cell",
]

Cell = Literal["gru", "lstm"]
"""The recurrent cells a configuration may name."""

CELLS = ("gru", "lstm")

_CELL_MODULES = {"gru": nn.GRUCell, "lstm": nn.OptimizedLSTMCell}


def initial_carry(cell: str, size: int, batch: int) -> Any:
    """The carry of ``batch`` sequences at an episode's start: zeros.

    Returns:
        GRU: float32 ``(batch, size)``. LSTM: a tuple ``(c, h)`` of two such arrays (Flax's
        ``OptimizedLSTMCell`` layout).
    """
    zeros = jnp.zeros((batch, size), jnp.float32)
    return (zeros, zeros) if cell == "lstm" else zeros


def reset_carry(carry: Any, first: jax.Array, fresh: Any) -> Any:
    """``fresh`` where ``first`` (bool ``(B,)``) marks an episode's first observation.

    Every leaf of ``carry`` and ``fresh`` is ``(B, ...)``; the other rows keep ``carry``.
    """

    def pick(c: jax.Array, f: jax.Array) -> jax.Array:
        return jnp.where(first.reshape(first.shape + (1,) * (c.ndim - 1)), f, c)

    return jax.tree.map(pick, carry, fresh)


def run_cell(
    module: nn.Module, params: Any, features: jax.Array, carry: Any, first: jax.Array
) -> tuple[Any, jax.Array]:
    """A recurrent network's cell over encoded observations: one step, or a sequence.

    Args:
        module: A :class:`RecurrentActorCritic` or :class:`RecurrentQNetwork`.
        params: Its parameters.
        features: Encoded observations (its ``encode``): ``(B, F)`` for one step, or
            ``(T, B, F)`` for time-major sequences.
        carry: The carry before the first step, leaves ``(B, ...)``.
        first: bool ``(B,)`` or ``(T, B)``: the observation opens an episode (the carry is
            reset before it).

    Returns:
        ``(carry, y)``: the carry after the last step, and the cell's outputs ``(B,
        cell_size)`` or ``(T, B, cell_size)``.
    """
    if first.ndim == 1:
        return module.apply(params, features, carry, first, method="step")

    def step(c: Any, xs: tuple) -> tuple:
        features_t, first_t = xs
        return module.apply(params, features_t, c, first_t, method="step")

    return jax.lax.scan(step, carry, (features, first))


class _Torso(nn.Module):
    """Observation features then an MLP: vectors as they are, images through encoders."""

    hidden_sizes: Sequence[int]
    activation: str
    image_shapes: Mapping[str, tuple[int, ...]] | None
    layer_norm: bool
    encoder: str
    mlp_layer_norm: bool = False

    @nn.compact
    def __call__(self, obs: Any) -> jax.Array:
        if isinstance(obs, Mapping):
            encoders = image_encoders(
                self.image_shapes or {},
                obs.keys(),
                self.layer_norm,
                flatten=self.encoder == "flatten",
            )
            x = join_features({k: e(obs[k]) for k, e in encoders.items()}, obs, obs.keys())
        else:
            x = obs.astype(jnp.float32)
        return MLP(self.hidden_sizes, self.activation, self.mlp_layer_norm)(x)


def _core(cell: str, cell_size: int) -> nn.Module:
    """The Flax cell a configuration names (checked here, where a network is set up)."""
    if cell not in CELLS:
        raise ValueError(f"cell must be one of {CELLS}, got {cell!r}.")
    return _CELL_MODULES[cell](features=cell_size)


class _Recurrent(nn.Module):
    """What the recurrent networks share: the encoder and the cell's step.

    Each network sets up an encoder (``torso``), run on every observation at once, and a
    cell (``core``), stepped one observation at a time.
    """

    def encode(self, obs: Any) -> jax.Array:
        """Observations ``(..., *shape)`` -> float32 features ``(..., hidden_sizes[-1])``."""
        return self.torso(obs)

    def step(self, features: jax.Array, carry: Any, first: jax.Array) -> tuple[Any, jax.Array]:
        """One cell step of ``B`` sequences: ``(carry, y (B, cell_size))``.

        ``carry`` is reset to its initial value first where ``first`` (bool ``(B,)``) marks
        an episode's first observation.

        Raises:
            TypeError: ``first`` is not bool, as when a carry and ``first`` are swapped (a
                recurrent step is ``(obs, carry, first)`` everywhere in rollax).
        """
        if jnp.asarray(first).dtype != jnp.bool_:
            raise TypeError(
                f"A recurrent step takes (obs, carry, first), first bool (B,); got first of "
                f"dtype {jnp.asarray(first).dtype}: are carry and first swapped?"
            )
        fresh = initial_carry(self.cell, self.cell_size, features.shape[0])
        return self.core(reset_carry(carry, first, fresh), features)


class _Heads(nn.Module):
    """The actor's and the critic's hidden layer and heads on the cell's output."""

    action_dim: int
    discrete: bool
    size: int
    activation: str

    @nn.compact
    def __call__(self, y: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        actor = MLP((self.size,), self.activation, name="actor_torso")(y)
        critic = MLP((self.size,), self.activation, name="critic_torso")(y)
        return heads(self, actor, critic, self.action_dim, self.discrete)


class RecurrentActorCritic(_Recurrent):
    """Encoder, recurrent cell, and separate actor and critic heads on the cell's output.

    The encoder (an MLP on vector observations; for dict observations a CNN per image, or
    the flattened image, joined with the vectors first) runs on every observation at once;
    only the cell runs step by step. Call it through its methods, as
    :func:`~rollax.networks.recurrent_network` does: ``encode``, ``step`` and
    :meth:`outputs`; ``__call__`` is one whole step, for ``init``.

    Attributes:
        action_dim: Number of actions (discrete) or action dimensions (box).
        discrete: Whether the action space is discrete.
        cell: ``"gru"`` (``flax.linen.GRUCell``) or ``"lstm"``
            (``flax.linen.OptimizedLSTMCell``).
        cell_size: Features of the cell's state.
        hidden_sizes: Widths of the encoder's MLP, before the cell.
        head_size: Width of the hidden layer of each of the actor and critic heads.
        activation: Activation of the MLPs.
        image_shapes: ``(H, W, C)`` of each image key of a dict observation.
        layer_norm: Per-channel layer normalization in the image encoders.
        encoder: Dict observations: ``"cnn"`` or ``"flatten"`` (see
            :class:`~rollax.networks.VisionActorCritic`).
    """

    action_dim: int
    discrete: bool
    cell: str = "gru"
    cell_size: int = 128
    hidden_sizes: Sequence[int] = (128,)
    head_size: int = 128
    activation: str = "tanh"
    image_shapes: Mapping[str, tuple[int, ...]] | None = None
    layer_norm: bool = False
    encoder: str = "cnn"

    def setup(self) -> None:
        self.core = _core(self.cell, self.cell_size)
        self.torso = _Torso(
            self.hidden_sizes, self.activation, self.image_shapes, self.layer_norm, self.encoder
        )
        self.heads = _Heads(self.action_dim, self.discrete, self.head_size, self.activation)

    def outputs(self, y: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        """Cell outputs ``(..., cell_size)`` -> ``(logits_or_mean, log_std, value)``."""
        return self.heads(y)

    def __call__(self, obs: Any, carry: Any, first: jax.Array) -> tuple[Any, tuple]:
        """One whole step of ``B`` sequences: ``(carry, (logits_or_mean, log_std, value))``."""
        carry, y = self.step(self.encode(obs), carry, first)
        return carry, self.outputs(y)


class _QHead(nn.Module):
    num_actions: int
    dueling: bool

    @nn.compact
    def __call__(self, y: jax.Array) -> jax.Array:
        return q_head(y, self.num_actions, self.dueling)


class RecurrentQNetwork(_Recurrent):
    """Encoder, recurrent cell and a Q-value head: the Q-network of recurrent DQN (R2D2).

    The encoder (an MLP on vector observations; for dict observations a CNN per image, or
    each image flattened with ``encoder="flatten"``, joined with the vectors first) runs on
    every observation at once; only the cell runs step by step. Call it through its
    methods, as :func:`~rollax.networks.recurrent_network` does: ``encode``, ``step`` and
    :meth:`q_values`; ``__call__`` is one whole step, for ``init``.

    Attributes:
        num_actions: Number of discrete actions.
        cell: ``"gru"`` (``flax.linen.GRUCell``) or ``"lstm"``
            (``flax.linen.OptimizedLSTMCell``).
        cell_size: Features of the cell's state.
        hidden_sizes: Widths of the encoder's MLP, before the cell.
        activation: Activation of the MLP.
        dueling: Separate state-value and advantage streams on the cell's output.
        image_shapes: ``(H, W, C)`` of each image key of a dict observation.
        layer_norm: Per-channel layer normalization in the image encoders.
        mlp_layer_norm: Layer normalization in each hidden layer of the encoder's MLP.
        encoder: ``"cnn"``: a CNN per image. ``"flatten"``: each image, scaled to ``[0, 1]``
            and flattened, goes straight into the MLP.
    """

    num_actions: int
    cell: str = "gru"
    cell_size: int = 128
    hidden_sizes: Sequence[int] = (128,)
    activation: str = "relu"
    dueling: bool = False
    image_shapes: Mapping[str, tuple[int, ...]] | None = None
    layer_norm: bool = False
    mlp_layer_norm: bool = False
    encoder: str = "cnn"

    def setup(self) -> None:
        self.core = _core(self.cell, self.cell_size)
        self.torso = _Torso(
            self.hidden_sizes,
            self.activation,
            self.image_shapes,
            self.layer_norm,
            self.encoder,
            self.mlp_layer_norm,
        )
        self.head = _QHead(self.num_actions, self.dueling)

    def q_values(self, y: jax.Array) -> jax.Array:
        """Cell outputs ``(..., cell_size)`` -> float32 Q-values ``(..., num_actions)``."""
        return self.head(y)

    def __call__(self, obs: Any, carry: Any, first: jax.Array) -> tuple[Any, jax.Array]:
        """One whole step of ``B`` sequences: ``(carry, q (B, num_actions))``."""
        carry, y = self.step(self.encode(obs), carry, first)
        return carry, self.q_values(y)
