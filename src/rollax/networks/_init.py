"""Orthogonal initialization without LAPACK.

``jax.nn.initializers.orthogonal`` orthonormalizes a Gaussian matrix with a QR factorization,
a LAPACK custom call that XLA:CPU runs on its intra-op thread pool and that parallelizes a
batch of factorizations on that same pool. When several run at once (``vmap`` over seeds, or
independent layers scheduled side by side) every pool thread can end up waiting for sub-tasks
that no free thread will ever run: the program hangs (seen here on a 2-core machine while
initializing PPO with three seeds). Gram-Schmidt needs only matrix-vector products, so it runs
anywhere, and for the same key it returns the same matrix as the QR-based initializer (the QR
factor with a positive diagonal in R is exactly what Gram-Schmidt produces).
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp

__all__ = ["orthogonal"]


def _orthonormal_columns(z: jax.Array) -> jax.Array:
    """Gram-Schmidt with re-orthogonalization ("twice is enough") on ``z (n, m)``, ``n >= m``.

    Returns ``q (n, m)`` with orthonormal columns spanning the same nested subspaces as
    ``z``'s, each with a positive component along its own column of ``z``.
    """

    def column(k: jax.Array, q: jax.Array) -> jax.Array:
        v = jax.lax.dynamic_index_in_dim(z, k, axis=1, keepdims=False)
        for _ in range(2):  # columns of q not yet written are zero, so this projects on 0..k-1
            # Full float32 precision: TF32 matmuls on GPUs would spoil orthogonality.
            coefficients = jnp.matmul(q.T, v, precision=jax.lax.Precision.HIGHEST)
            v = v - jnp.matmul(q, coefficients, precision=jax.lax.Precision.HIGHEST)
        v = v / jnp.sqrt(jnp.sum(v * v))
        return jax.lax.dynamic_update_index_in_dim(q, v, k, axis=1)

    return jax.lax.fori_loop(0, z.shape[1], column, jnp.zeros_like(z))


def orthogonal(scale: float = 1.0, column_axis: int = -1) -> Any:
    """A Flax/JAX initializer of (semi-)orthogonal matrices times ``scale``.

    Draws the same Gaussian matrix as ``jax.nn.initializers.orthogonal`` and returns the same
    result up to float rounding, without a LAPACK call (see the module docstring).

    Args:
        scale: Multiplies the orthogonal matrix.
        column_axis: The axis whose entries are the columns made orthonormal.
    """

    def init(key: jax.Array, shape: tuple[int, ...], dtype: Any = jnp.float32) -> jax.Array:
        if len(shape) < 2:
            raise ValueError(f"orthogonal: shape must have at least 2 dimensions, got {shape}.")
        n_cols = shape[column_axis]
        n_rows = math.prod(shape) // n_cols
        z = jax.random.normal(key, (max(n_rows, n_cols), min(n_rows, n_cols)), dtype)
        q = _orthonormal_columns(z)
        if n_rows < n_cols:
            q = q.T
        rest = tuple(d for i, d in enumerate(shape) if i != column_axis % len(shape))
        q = jnp.moveaxis(q.reshape(*rest, n_cols), -1, column_axis)
        return jnp.asarray(scale, dtype) * q

    return init
