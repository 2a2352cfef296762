"""Distributional (C51) critics for the agents that may use them (TD3)."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from rollax.ops import categorical_projection

__all__ = ["Support"]


class Support(NamedTuple):
    """The atoms of a categorical return distribution, and what critics do with them.

    Attributes:
        atoms: float32 ``(N,)``: evenly spaced from ``v_min`` to ``v_max``.
    """

    atoms: jax.Array

    @classmethod
    def of(cls, v_min: float, v_max: float, num_atoms: int) -> Support:
        """``num_atoms`` atoms from ``v_min`` to ``v_max``."""
        return cls(jnp.linspace(v_min, v_max, num_atoms, dtype=jnp.float32))

    def value(self, logits: jax.Array) -> jax.Array:
        """Expected values ``(...)`` of distributions given by logits ``(..., N)``."""
        return (jax.nn.softmax(logits) * jnp.broadcast_to(self.atoms, logits.shape)).sum(axis=-1)

    def double_q_target(
        self, next_logits: jax.Array, reward: jax.Array, discount: jax.Array
    ) -> jax.Array:
        """The clipped double-Q target as a distribution ``(B, N)``.

        The successor's distribution of whichever twin critic expects less, projected after
        ``reward + discount * Z`` (:func:`rollax.ops.categorical_projection`).

        Args:
            next_logits: float ``(2, B, N)``: both target critics' logits of the successor.
            reward: float ``(B,)``: (n-step) rewards.
            discount: float ``(B,)``: their bootstrap discounts (0 after a termination).
        """
        smaller = jnp.argmin(self.value(next_logits), axis=0)  # (B,)
        probs = jax.nn.softmax(next_logits)
        chosen = jnp.take_along_axis(probs, smaller[None, :, None], axis=0)[0]
        return jax.lax.stop_gradient(categorical_projection(chosen, self.atoms, reward, discount))

    @staticmethod
    def loss(logits: jax.Array, target: jax.Array) -> jax.Array:
        """Both critics' cross-entropy to the target ``(B, N)`` from logits ``(2, B, N)``.

        Averaged over the batch, summed over the critics.
        """
        return -(target[None] * jax.nn.log_softmax(logits)).sum(axis=-1).mean(axis=1).sum()
