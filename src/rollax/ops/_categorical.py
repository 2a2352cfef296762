"""The categorical (C51) projection of a distributional Bellman target onto a fixed support."""

from __future__ import annotations

import jax
import jax.numpy as jnp

__all__ = ["categorical_projection"]


def categorical_projection(
    probs: jax.Array, support: jax.Array, reward: jax.Array, discount: jax.Array
) -> jax.Array:
    """Project ``reward + discount * Z`` back onto ``support`` (Bellemare et al., 2017).

    Each atom ``z_j`` of the successor's distribution moves to ``r + discount * z_j``,
    clipped to ``[support[0], support[-1]]``, and its probability is split between the two
    neighbouring atoms of the support in proportion to its distance from each (all of it to
    one atom where it lands on one). ``discount = 0`` (a termination) puts everything at
    ``r``.

    Args:
        probs: float ``(B, N)``: the successors' distributions over ``support``.
        support: float ``(N,)``: evenly spaced atoms, ascending.
        reward: float ``(B,)``: (n-step) rewards.
        discount: float ``(B,)``: their bootstrap discounts.

    Returns:
        float ``(B, N)``: the projected distributions (each sums to 1 where ``probs`` does).
    """
    n = support.shape[0]
    v_min, v_max = support[0], support[-1]
    delta = (v_max - v_min) / (n - 1)
    moved = jnp.clip(reward[:, None] + discount[:, None] * support[None, :], v_min, v_max)
    position = (moved - v_min) / delta  # (B, N) in [0, N - 1]
    lower = jnp.floor(position)
    upper = jnp.ceil(position)
    to_lower = jnp.where(upper == lower, 1.0, upper - position)
    to_upper = position - lower
    # (B, N atoms moved, N atoms of the support): one-hot of each moved atom's neighbours.
    spread = (
        jax.nn.one_hot(lower.astype(jnp.int32), n) * to_lower[..., None]
        + jax.nn.one_hot(upper.astype(jnp.int32), n) * to_upper[..., None]
    )
    return jnp.einsum("bj,bjk->bk", probs, spread)
