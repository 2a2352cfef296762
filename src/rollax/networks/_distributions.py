"""The two policy distributions PPO needs, written for strict dtype and rank promotion.

(Distrax's versions rely on implicit rank promotion and import TensorFlow Probability's JAX
substrate, which touches JAX names deprecated in 0.10; these few lines avoid both.)
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from rollax._struct import pytree_dataclass

__all__ = ["Categorical", "DiagGaussian"]


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
