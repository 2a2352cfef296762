"""A vision actor-critic: one CNN encoder per camera, vectors joined after the encoders.

Observations are dicts (docs/design.md §6): ``"pixels/<camera>"`` uint8 ``(H, W, C)`` images and
float vectors such as ``"state"``. Images are scaled to ``[0, 1]`` inside the network.
Actor and critic may read different keys (an asymmetric actor-critic: the critic alone may
see a ``"privileged_state"``); an image both read is encoded once, by one encoder.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from rollax.networks._actor_critic import ACTIVATIONS, MLP, heads
from rollax.networks._init import orthogonal
from rollax.spaces import is_image_key

__all__ = [
    "CNNEncoder",
    "Conv",
    "VisionActorCritic",
    "encode_observation",
    "image_encoders",
    "join_features",
]


class Conv(nn.Module):
    """A 2-D convolution with ``"SAME"`` padding, computed the fastest way for the backend.

    On the CPU it is a matrix product over image patches (im2col): XLA:CPU runs a native
    convolution far slower inside a loop (PPO's epochs are a ``lax.scan``) than outside one,
    while a matrix product runs at full speed in both (the Agents page, PPO, has the
    figures). Elsewhere it is ``lax.conv_general_dilated``. Both compute the same function
    with the same parameters (``kernel`` ``(k, k, in, out)``, ``bias`` ``(out,)``).

    Attributes:
        features: Output channels.
        kernel_size: Side of the square kernel.
        stride: Step between output positions, in both directions.
    """

    features: int
    kernel_size: int
    stride: int = 1

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        """``(B, H, W, C)`` -> ``(B, ceil(H / stride), ceil(W / stride), features)``."""
        k, s = self.kernel_size, self.stride
        kernel = self.param(
            "kernel", orthogonal(np.sqrt(2)), (k, k, x.shape[-1], self.features), jnp.float32
        )
        bias = self.param("bias", nn.initializers.zeros, (self.features,), jnp.float32)
        if jax.default_backend() != "cpu":
            y = jax.lax.conv_general_dilated(
                x, kernel, (s, s), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
            )
            return y + bias.reshape(1, 1, 1, -1)
        _, h, w, c = x.shape
        out_h, out_w = -(-h // s), -(-w // s)
        pad_h = max((out_h - 1) * s + k - h, 0)
        pad_w = max((out_w - 1) * s + k - w, 0)
        x = jnp.pad(
            x, ((0, 0), (pad_h // 2, pad_h - pad_h // 2), (pad_w // 2, pad_w - pad_w // 2), (0, 0))
        )
        patches = jnp.concatenate(
            [
                x[:, i : i + (out_h - 1) * s + 1 : s, j : j + (out_w - 1) * s + 1 : s, :]
                for i in range(k)
                for j in range(k)
            ],
            axis=-1,
        )
        return patches @ kernel.reshape(k * k * c, self.features) + bias.reshape(1, 1, 1, -1)


SMALL_ENCODER = {"channels": (16, 32, 32), "kernels": (3, 3, 3), "strides": (2, 2, 2), "dense": 256}
"""Images of 16 to 63 pixels a side: three 3x3 convolutions of stride 2 (each halves the
image), dense 256. About 1.7M multiply-adds for a 32x64 image: PPO on pixel CartPole trains
several times faster than with 32, 64, 64 channels at strides 2, 2, 1 (the Agents page,
PPO)."""

BOARD_ENCODER = {"channels": (8,), "kernels": (3,), "strides": (1,), "dense": 128}
"""Images under 16 pixels a side, such as MinAtar's 10x10 boards: one 3x3 convolution at
stride 1, as in the MinAtar paper's network (Young and Tian, 2019), with 8 channels instead
of its 16 (a third less time per gradient step on a CPU), then dense 128."""


class CNNEncoder(nn.Module):
    """Convolutions, then a dense layer: uint8 or float images to a feature vector.

    The default is the Nature DQN encoder (32 8x8/4, 64 4x4/2, 64 3x3/1, dense 512) for
    images of at least 64 pixels a side; :meth:`for_image` picks smaller ones for smaller
    images, which the Nature strides would shrink to nothing.

    Attributes:
        channels: Output channels of each convolution.
        kernels: Kernel size of each convolution (square).
        strides: Stride of each convolution.
        dense: Width of the dense layer after the convolutions (0: none).
        layer_norm: Normalize each convolution's output over its channels (per position).
        pool: ``"none"`` flattens the last feature map; ``"avg"`` or ``"max"`` pools it over
            space first (fewer parameters, some translation invariance).
        activation: ``"relu"``, ``"tanh"`` or ``"gelu"``.
    """

    channels: Sequence[int] = (32, 64, 64)
    kernels: Sequence[int] = (8, 4, 3)
    strides: Sequence[int] = (4, 2, 1)
    dense: int = 512
    layer_norm: bool = False
    pool: str = "none"
    activation: str = "relu"

    @staticmethod
    def for_image(shape: Sequence[int], **options) -> CNNEncoder:
        """The default encoder for images of ``shape`` ``(H, W, C)``.

        From 64 pixels a side: the Nature encoder. From 16: three 3x3 convolutions at
        stride 2 (16, 32, 32 channels) and 256 features (``SMALL_ENCODER``). Below (MinAtar's
        10x10 boards): one 3x3 convolution at stride 1 (8 channels) and 128 features
        (``BOARD_ENCODER``). ``options`` override any field.
        """
        side = min(shape[0], shape[1])
        sizes = {} if side >= 64 else SMALL_ENCODER if side >= 16 else BOARD_ENCODER
        return CNNEncoder(**{**sizes, **options})

    @nn.compact
    def __call__(self, image: jax.Array) -> jax.Array:
        """``(..., H, W, C)`` uint8 (scaled by 1/255) or float -> ``(..., features)``."""
        if not (len(self.channels) == len(self.kernels) == len(self.strides)):
            raise ValueError(
                f"channels, kernels and strides need one entry per convolution, got "
                f"{self.channels}, {self.kernels}, {self.strides}"
            )
        if self.pool not in ("none", "avg", "max"):
            raise ValueError(f"pool must be 'none', 'avg' or 'max', got {self.pool!r}")
        if jnp.issubdtype(image.dtype, jnp.integer):
            x = image.astype(jnp.float32) / jnp.float32(255.0)
        else:
            x = image.astype(jnp.float32)
        batch = x.shape[:-3]
        x = x.reshape((-1, *x.shape[-3:]))
        act = ACTIVATIONS[self.activation]
        for c, k, s in zip(self.channels, self.kernels, self.strides, strict=True):
            x = Conv(c, k, s)(x)
            if self.layer_norm:
                x = nn.LayerNorm()(x)
            x = act(x)
        if self.pool == "avg":
            x = jnp.mean(x, axis=(1, 2))
        elif self.pool == "max":
            x = jnp.max(x, axis=(1, 2))
        else:
            x = x.reshape((x.shape[0], -1))
        if self.dense:
            x = act(nn.Dense(self.dense, kernel_init=orthogonal(np.sqrt(2)))(x))
        return x.reshape((*batch, x.shape[-1]))


class VisionActorCritic(nn.Module):
    """Actor and critic over dict observations, with one CNN encoder per image key.

    Each of actor and critic encodes the images among its keys (an image both read goes
    through one shared encoder), concatenates the features with its vector keys in key
    order, and applies its MLP and head.

    Attributes:
        action_dim: Number of actions (discrete) or action dimensions (box).
        discrete: Whether the action space is discrete.
        actor_keys: Observation keys the actor reads.
        critic_keys: Observation keys the critic reads.
        image_shapes: ``(H, W, C)`` of every image key read, by key (picks each encoder).
        hidden_sizes: Widths of the MLP after the encoders, for both heads.
        activation: Activation of the MLPs.
        layer_norm: Per-channel layer normalization in the encoders.
        pool: Spatial pooling at the end of the encoders: ``"none"``, ``"avg"`` or ``"max"``.
        encoder: ``"cnn"``: one CNN per image, shared by actor and critic. ``"flatten"``: each
            image, scaled to ``[0, 1]``, is flattened into the actor's and the critic's MLPs
            (no parameters shared between them).
    """

    action_dim: int
    discrete: bool
    actor_keys: Sequence[str]
    critic_keys: Sequence[str]
    image_shapes: Mapping[str, tuple[int, ...]]
    hidden_sizes: Sequence[int] = (256,)
    activation: str = "relu"
    layer_norm: bool = False
    pool: str = "none"
    encoder: str = "cnn"

    @nn.compact
    def __call__(self, obs: Mapping[str, jax.Array]) -> tuple[jax.Array, jax.Array, jax.Array]:
        """``obs`` (dict, leaves ``(..., *shape)``) -> ``(logits_or_mean, log_std, value)``."""
        keys = set(self.actor_keys) | set(self.critic_keys)
        encoders = image_encoders(
            self.image_shapes, keys, self.layer_norm, self.pool, flatten=self.encoder == "flatten"
        )
        features = {key: encoders[key](obs[key]) for key in encoders}
        actor = MLP(self.hidden_sizes, self.activation, name="actor_torso")(
            join_features(features, obs, self.actor_keys)
        )
        critic = MLP(self.hidden_sizes, self.activation, name="critic_torso")(
            join_features(features, obs, self.critic_keys)
        )
        return heads(self, actor, critic, self.action_dim, self.discrete)


def image_encoders(
    image_shapes: Mapping[str, tuple[int, ...]],
    keys: Iterable[str],
    layer_norm: bool = False,
    pool: str = "none",
    flatten: bool = False,
) -> dict[str, CNNEncoder]:
    """One :class:`CNNEncoder` per image key among ``keys``, named ``encoder_<key>``.

    With ``flatten``, each encoder has no convolution and no dense layer: it scales the
    image to ``[0, 1]`` and flattens it, ``(..., H, W, C) -> (..., H * W * C)``, with no
    parameters. Call inside a compact module: the encoders become its submodules.
    """
    sizes = {"channels": (), "kernels": (), "strides": (), "dense": 0} if flatten else {}
    return {
        key: CNNEncoder.for_image(
            image_shapes[key],
            layer_norm=layer_norm,
            pool=pool,
            name="encoder_" + key.replace("/", "_"),
            **sizes,
        )
        for key in sorted(keys)
        if is_image_key(key)
    }


def join_features(
    features: Mapping[str, jax.Array], obs: Mapping[str, jax.Array], keys: Iterable[str]
) -> jax.Array:
    """The encoded images and the float vectors of ``keys``, concatenated in key order."""
    parts = [features[k] if k in features else obs[k].astype(jnp.float32) for k in sorted(keys)]
    return jnp.concatenate(parts, axis=-1)


def encode_observation(
    obs: Any,
    image_shapes: Mapping[str, tuple[int, ...]],
    layer_norm: bool = False,
    flatten: bool = False,
) -> jax.Array:
    """Features of a vector or dict observation, for a network with one torso.

    A vector passes as float32. A dict's images each go through their own
    :class:`CNNEncoder` (submodules of the calling compact module), or with ``flatten`` are
    scaled to ``[0, 1]`` and flattened (:func:`image_encoders`), and are joined with the
    vectors in key order.
    """
    if not isinstance(obs, Mapping):
        return obs.astype(jnp.float32)
    encoders = image_encoders(image_shapes, obs.keys(), layer_norm, flatten=flatten)
    features = {key: encoders[key](obs[key]) for key in encoders}
    return join_features(features, obs, obs.keys())
