"""Observation and action spaces.

A space describes the values of one environment (no batch axis). ``sample`` draws with an
explicit key and takes an optional ``batch_shape``; ``contains`` answers for a single value
and works under ``jit``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["Box", "Discrete", "Space"]


@dataclasses.dataclass(frozen=True)
class Discrete:
    """The integers ``0, 1, ..., n - 1``.

    Attributes:
        n: Number of values; a positive integer.
    """

    n: int

    def __post_init__(self) -> None:
        if isinstance(self.n, bool) or not isinstance(self.n, (int, np.integer)) or self.n < 1:
            raise ValueError(f"Discrete: n must be a positive integer, got {self.n!r}.")

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of one value: ``()``."""
        return ()

    @property
    def dtype(self) -> np.dtype:
        """Dtype of sampled values: ``int32``."""
        return np.dtype(np.int32)

    def sample(self, key: jax.Array, batch_shape: tuple[int, ...] = ()) -> jax.Array:
        """Uniform values, int32 of shape ``batch_shape``."""
        return jax.random.randint(key, batch_shape, 0, self.n, dtype=jnp.int32)

    def contains(self, x: Any) -> jax.Array:
        """Whether ``x`` is one integer in ``[0, n)``; a bool scalar array."""
        x = jnp.asarray(x)
        if x.shape != () or not jnp.issubdtype(x.dtype, jnp.integer):
            return jnp.asarray(False)
        return (x >= 0) & (x < self.n)

    def describe(self) -> str:
        """A short human-readable description, used in error messages."""
        return f"Discrete({self.n}): integers in [0, {self.n})"


@dataclasses.dataclass(frozen=True)
class Box:
    """Real vectors between ``low`` and ``high`` (bounds may be infinite).

    Attributes:
        low: Lower bounds, broadcast to ``shape``.
        high: Upper bounds, broadcast to ``shape``.
        shape: Shape of one value.
        dtype: A floating dtype; float32 by default.
    """

    low: Any
    high: Any
    shape: tuple[int, ...] = ()
    dtype: Any = np.float32

    def __post_init__(self) -> None:
        dtype = np.dtype(self.dtype)
        if not np.issubdtype(dtype, np.floating):
            raise TypeError(f"Box: dtype must be a floating dtype, got {dtype}.")
        shape = tuple(int(s) for s in self.shape) or np.shape(self.low) or np.shape(self.high)
        low = np.broadcast_to(np.asarray(self.low, dtype), shape).copy()
        high = np.broadcast_to(np.asarray(self.high, dtype), shape).copy()
        if np.any(low > high):
            raise ValueError(f"Box: low must be <= high everywhere, got low={low}, high={high}.")
        low.flags.writeable = False
        high.flags.writeable = False
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)
        object.__setattr__(self, "shape", tuple(shape))
        object.__setattr__(self, "dtype", dtype)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Box)
            and self.shape == other.shape
            and self.dtype == other.dtype
            and np.array_equal(self.low, other.low)
            and np.array_equal(self.high, other.high)
        )

    def __hash__(self) -> int:
        return hash((self.shape, str(self.dtype), self.low.tobytes(), self.high.tobytes()))

    def __repr__(self) -> str:
        def bound(x: np.ndarray) -> str:
            # A uniform bound prints as one number (an image space would fill the screen).
            if x.size and np.all(x == x.flat[0]):
                return str(x.flat[0].item())
            return np.array2string(x, threshold=16, separator=", ")

        return (
            f"Box(low={bound(self.low)}, high={bound(self.high)}, shape={self.shape}, "
            f"dtype={self.dtype})"
        )

    def sample(self, key: jax.Array, batch_shape: tuple[int, ...] = ()) -> jax.Array:
        """Draw values of shape ``batch_shape + shape``.

        Bounded dimensions are uniform, unbounded ones standard normal, and half-bounded
        ones the bound plus or minus a unit exponential (as Gymnasium's ``Box`` does).
        """
        shape = tuple(batch_shape) + self.shape
        k_uniform, k_normal, k_exp = jax.random.split(key, 3)
        low = jnp.broadcast_to(jnp.asarray(self.low), shape)
        high = jnp.broadcast_to(jnp.asarray(self.high), shape)
        lo_finite = jnp.isfinite(low)
        hi_finite = jnp.isfinite(high)
        uniform = jax.random.uniform(
            k_uniform,
            shape,
            self.dtype,
            jnp.where(lo_finite, low, 0.0),
            jnp.where(hi_finite, high, 1.0),
        )
        normal = jax.random.normal(k_normal, shape, self.dtype)
        expo = jax.random.exponential(k_exp, shape, self.dtype)
        return jnp.where(
            lo_finite & hi_finite,
            uniform,
            jnp.where(lo_finite, low + expo, jnp.where(hi_finite, high - expo, normal)),
        )

    def contains(self, x: Any) -> jax.Array:
        """Whether ``x`` has this shape and lies within the bounds; a bool scalar array."""
        x = jnp.asarray(x)
        if x.shape != self.shape or not jnp.issubdtype(x.dtype, jnp.floating):
            return jnp.asarray(False)
        return jnp.all((x >= self.low) & (x <= self.high))

    def describe(self) -> str:
        """A short human-readable description, used in error messages."""
        return f"Box(shape={self.shape}, dtype={self.dtype}, low={self.low}, high={self.high})"


Space = Discrete | Box
"""Any rollax space."""
