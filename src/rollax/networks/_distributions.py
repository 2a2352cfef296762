"""Policy distributions, written for strict dtype and rank promotion.

(Distrax's versions rely on implicit rank promotion and import TensorFlow Probability's JAX
substrate, which touches JAX names deprecated in 0.10; these few lines avoid both.)
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from rollax._struct import pytree_dataclass

__all__ = ["Categorical", "DiagGaussian", "TanhGaussian"]


@pytree_dataclass
class Categorical:
    """A categorical distribution over the last axis of ``logits`` (float ``(..., K)``)."""

    logits: jax.Array

    @property
    def _log_probs(self) -> jax.Array:
        return jax.nn.log_softmax(self.logits, axis=-1)

    def sample(self, seed: jax.Array) -> jax.Array:
        """int32 ``(...)``."""
        return jax.random.categorical(seed, self.logits, axis=-1).astype(jnp.int32)

    def log_prob(self, value: jax.Array) -> jax.Array:
        """Log-probability of integer ``value`` (``(...)``)."""
        index = value.astype(jnp.int32)[..., None]
        return jnp.take_along_axis(self._log_probs, index, axis=-1)[..., 0]

    def entropy(self) -> jax.Array:
        """``(...)``."""
        log_p = self._log_probs
        return -(jnp.exp(log_p) * log_p).sum(-1)

    def mode(self) -> jax.Array:
        """The most likely value, int32 ``(...)``."""
        return jnp.argmax(self.logits, axis=-1).astype(jnp.int32)

    def sample_and_log_prob(self, seed: jax.Array) -> tuple[jax.Array, jax.Array]:
        """A sample and its log-probability."""
        value = self.sample(seed)
        return value, self.log_prob(value)


@pytree_dataclass
class DiagGaussian:
    """A Gaussian with diagonal covariance over the last axis.

    Attributes:
        mean: float ``(..., D)``.
        log_std: float ``(..., D)`` (broadcast by the caller to ``mean``'s shape).
    """

    mean: jax.Array
    log_std: jax.Array

    def sample(self, seed: jax.Array) -> jax.Array:
        """Float ``(..., D)``."""
        noise = jax.random.normal(seed, self.mean.shape, self.mean.dtype)
        return self.mean + jnp.exp(self.log_std) * noise

    def log_prob(self, value: jax.Array) -> jax.Array:
        """Summed over the last axis: ``(...)``."""
        z = (value - self.mean) * jnp.exp(-self.log_std)
        return (-0.5 * z**2 - self.log_std - 0.5 * math.log(2 * math.pi)).sum(-1)

    def entropy(self) -> jax.Array:
        """``(...)``."""
        return (self.log_std + 0.5 * math.log(2 * math.pi * math.e)).sum(-1)

    def mode(self) -> jax.Array:
        """The mean."""
        return self.mean

    def sample_and_log_prob(self, seed: jax.Array) -> tuple[jax.Array, jax.Array]:
        """A sample and its log-probability."""
        value = self.sample(seed)
        return value, self.log_prob(value)


@pytree_dataclass
class TanhGaussian:
    """A diagonal Gaussian squashed by ``tanh`` and scaled to the box ``[low, high]``.

    A sample is ``low + (tanh(u) + 1) / 2 * (high - low)`` with ``u ~ N(mean, std)``; its
    log-density subtracts the log-determinant of the squashing, computed as ``2 * (log 2 -
    u - softplus(-2u))`` (stable where ``tanh(u)`` rounds to +-1, where ``log(1 -
    tanh(u)**2)`` would give -inf), and of the scaling (SAC, Haarnoja et al., 2018).

    Attributes:
        mean: float ``(..., D)``: mean of ``u``.
        log_std: float ``(..., D)``: log standard deviation of ``u``.
        low: float ``(D,)``: lower bounds of the actions.
        high: float ``(D,)``: upper bounds.
    """

    mean: jax.Array
    log_std: jax.Array
    low: jax.Array
    high: jax.Array

    def _bounds(self, shape: tuple[int, ...]) -> tuple[jax.Array, jax.Array]:
        return jnp.broadcast_to(self.low, shape), jnp.broadcast_to(self.high, shape)

    def _squash(self, u: jax.Array) -> jax.Array:
        low, high = self._bounds(u.shape)
        return low + (jnp.tanh(u) + 1.0) * (0.5 * (high - low))

    def sample_and_log_prob(self, seed: jax.Array) -> tuple[jax.Array, jax.Array]:
        """A sample float ``(..., D)`` in the box and its log-density ``(...)``."""
        return self.from_noise(jax.random.normal(seed, self.mean.shape, self.mean.dtype))

    def from_noise(self, noise: jax.Array) -> tuple[jax.Array, jax.Array]:
        """The sample made from standard normal ``noise`` ``(..., D)``, and its log-density.

        Differentiable in ``mean`` and ``log_std`` (the reparameterization), so one draw of
        noise can serve several losses without drawing (or reusing a key) again.
        """
        u = self.mean + jnp.exp(self.log_std) * noise
        log_prob = DiagGaussian(self.mean, self.log_std).log_prob(u)
        log_det = 2.0 * (math.log(2.0) - u - jax.nn.softplus(-2.0 * u))
        low, high = self._bounds(u.shape)
        log_scale = jnp.log(0.5 * (high - low))
        return self._squash(u), log_prob - (log_det + log_scale).sum(-1)

    def sample(self, seed: jax.Array) -> jax.Array:
        """Float ``(..., D)`` in the box."""
        return self.sample_and_log_prob(seed)[0]

    def mode(self) -> jax.Array:
        """The squashed mean (the deterministic action), float ``(..., D)``."""
        return self._squash(self.mean)
