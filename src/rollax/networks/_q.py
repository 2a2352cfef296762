"""Off-policy networks: Q-values (DQN), twin critics and a squashed Gaussian actor (SAC)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from rollax.networks._actor_critic import MLP
from rollax.networks._init import orthogonal
from rollax.networks._vision import encode_observation

__all__ = ["DeterministicActor", "DoubleQ", "QNetwork", "SquashedGaussianActor", "q_head"]


def q_head(x: jax.Array, num_actions: int, dueling: bool) -> jax.Array:
    """Q-values ``(..., num_actions)`` from features ``(..., F)``, inside a compact module.

    With ``dueling`` the head splits into a state value and advantages, ``Q = V + A -
    mean(A)`` (Wang et al., 2016).
    """
    if not dueling:
        return nn.Dense(num_actions, kernel_init=orthogonal(1.0), name="q")(x)
    value = nn.Dense(1, kernel_init=orthogonal(1.0), name="value")(x)
    advantage = nn.Dense(num_actions, kernel_init=orthogonal(1.0), name="advantage")(x)
    return value + advantage - advantage.mean(axis=-1, keepdims=True)


class QNetwork(nn.Module):
    """The value of every discrete action: observation ``(..., *obs)`` to ``(..., A)``.

    Vector observations go straight into the MLP; dict observations are encoded first (one
    CNN per image, or with ``encoder="flatten"`` each image scaled to [0, 1] and flattened;
    vectors joined: :func:`~rollax.networks.encode_observation`). With
    ``dueling`` the head splits into a state value and advantages, ``Q = V + A - mean(A)``
    (Wang et al., 2016).

    Attributes:
        num_actions: Number of discrete actions.
        hidden_sizes: Widths of the MLP's hidden layers.
        activation: Their activation (see :data:`~rollax.networks.ACTIVATIONS`).
        dueling: Separate value and advantage streams.
        image_shapes: ``(H, W, C)`` of each image key of a dict observation.
        layer_norm: Per-channel layer normalization in the image encoders.
        mlp_layer_norm: Layer normalization in each hidden layer of the MLP (PQN's).
        encoder: ``"cnn"``: a CNN per image. ``"flatten"``: each image, scaled to ``[0, 1]``
            and flattened, goes straight into the MLP (small boards such as MinAtar's).
    """

    num_actions: int
    hidden_sizes: Sequence[int] = (64, 64)
    activation: str = "relu"
    dueling: bool = False
    image_shapes: Mapping[str, tuple[int, ...]] | None = None
    layer_norm: bool = False
    mlp_layer_norm: bool = False
    encoder: str = "cnn"

    @nn.compact
    def __call__(self, obs: Any) -> jax.Array:
        """Q-values, float32 ``(..., num_actions)``."""
        x = encode_observation(
            obs, self.image_shapes or {}, self.layer_norm, flatten=self.encoder == "flatten"
        )
        x = MLP(self.hidden_sizes, self.activation, self.mlp_layer_norm, name="torso")(x)
        return q_head(x, self.num_actions, self.dueling)


class DoubleQ(nn.Module):
    """Two independent critics ``Q1(s, a), Q2(s, a)`` for continuous actions (SAC, TD3).

    Each critic encodes the observation itself (no shared features), joins the action and
    applies its own MLP.

    Attributes:
        hidden_sizes: Widths of each critic's hidden layers.
        activation: Their activation.
        image_shapes: ``(H, W, C)`` of each image key of a dict observation.
        layer_norm: Per-channel layer normalization in the image encoders.
        mlp_layer_norm: Layer normalization in each hidden layer of the critics' MLPs.
        atoms: 1 for a value per critic; more for each critic's logits over that many atoms
            of a return distribution (C51).
    """

    hidden_sizes: Sequence[int] = (256, 256)
    activation: str = "relu"
    image_shapes: Mapping[str, tuple[int, ...]] | None = None
    layer_norm: bool = False
    mlp_layer_norm: bool = False
    atoms: int = 1

    @nn.compact
    def __call__(self, obs: Any, action: jax.Array) -> jax.Array:
        """float32 ``(2, ...)``: both critics' values of ``action`` ``(..., A)``.

        With ``atoms > 1``: ``(2, ..., atoms)`` logits.
        """

        def critic(name: str) -> jax.Array:
            module = _Critic(self.hidden_sizes, self.activation, self.image_shapes, self.layer_norm,
                             self.mlp_layer_norm, self.atoms, name=name)  # fmt: skip
            return module(obs, action)

        return jnp.stack([critic("q1"), critic("q2")])


class _Critic(nn.Module):
    hidden_sizes: Sequence[int]
    activation: str
    image_shapes: Mapping[str, tuple[int, ...]] | None
    layer_norm: bool
    mlp_layer_norm: bool = False
    atoms: int = 1

    @nn.compact
    def __call__(self, obs: Any, action: jax.Array) -> jax.Array:
        x = encode_observation(obs, self.image_shapes or {}, self.layer_norm)
        x = jnp.concatenate([x, action.astype(jnp.float32)], axis=-1)
        x = MLP(self.hidden_sizes, self.activation, self.mlp_layer_norm, name="torso")(x)
        out = nn.Dense(self.atoms, kernel_init=orthogonal(1.0), name="head")(x)
        return out[..., 0] if self.atoms == 1 else out


class SquashedGaussianActor(nn.Module):
    """A policy over a box: observation to the mean and log-std of a pre-``tanh`` Gaussian.

    The log standard deviation is squashed into ``[log_std_min, log_std_max]`` with a tanh,
    so it stays bounded without clipping its gradient away. Pair the outputs with
    :class:`~rollax.networks.TanhGaussian` and the action bounds.

    Attributes:
        action_dim: Dimensions of the action.
        hidden_sizes: Widths of the MLP's hidden layers.
        activation: Their activation.
        image_shapes: ``(H, W, C)`` of each image key of a dict observation.
        layer_norm: Per-channel layer normalization in the image encoders.
        log_std_min: Smallest log standard deviation.
        log_std_max: Largest log standard deviation.
    """

    action_dim: int
    hidden_sizes: Sequence[int] = (256, 256)
    activation: str = "relu"
    image_shapes: Mapping[str, tuple[int, ...]] | None = None
    layer_norm: bool = False
    log_std_min: float = -5.0
    log_std_max: float = 2.0

    @nn.compact
    def __call__(self, obs: Any) -> tuple[jax.Array, jax.Array]:
        """``(mean, log_std)``, float32 ``(..., action_dim)`` each."""
        x = encode_observation(obs, self.image_shapes or {}, self.layer_norm)
        x = MLP(self.hidden_sizes, self.activation, name="torso")(x)
        mean = nn.Dense(self.action_dim, kernel_init=orthogonal(0.01), name="mean")(x)
        raw = nn.Dense(self.action_dim, kernel_init=orthogonal(0.01), name="log_std")(x)
        span = self.log_std_max - self.log_std_min
        log_std = self.log_std_min + 0.5 * span * (jnp.tanh(raw) + 1.0)
        return mean, log_std


class DeterministicActor(nn.Module):
    """A deterministic policy over a box (TD3): observation to an action in ``[-1, 1]``.

    The output is ``tanh`` of a linear head; scale it to the action's bounds.

    Attributes:
        action_dim: Dimensions of the action.
        hidden_sizes: Widths of the MLP's hidden layers.
        activation: Their activation.
        image_shapes: ``(H, W, C)`` of each image key of a dict observation.
        layer_norm: Per-channel layer normalization in the image encoders.
    """

    action_dim: int
    hidden_sizes: Sequence[int] = (256, 256)
    activation: str = "relu"
    image_shapes: Mapping[str, tuple[int, ...]] | None = None
    layer_norm: bool = False

    @nn.compact
    def __call__(self, obs: Any) -> jax.Array:
        """float32 ``(..., action_dim)`` in ``[-1, 1]``."""
        x = encode_observation(obs, self.image_shapes or {}, self.layer_norm)
        x = MLP(self.hidden_sizes, self.activation, name="torso")(x)
        return jnp.tanh(nn.Dense(self.action_dim, kernel_init=orthogonal(0.01), name="action")(x))
