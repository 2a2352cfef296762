"""Observation and action spaces.

A space describes the values of one environment (no batch axis). ``sample`` draws with an
explicit key and takes an optional ``batch_shape``; ``contains`` answers for a single value
and works under ``jit``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["Box", "Dict", "Discrete", "Space", "is_image_key", "observation_spec"]


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
    """Arrays between ``low`` and ``high``: real (bounds may be infinite) or integer.

    Attributes:
        low: Lower bounds, broadcast to ``shape``.
        high: Upper bounds, broadcast to ``shape`` (inclusive for integers).
        shape: Shape of one value.
        dtype: A floating dtype (float32 by default) or an integer one, such as uint8 for
            images (``Box(0, 255, (64, 64, 3), np.uint8)``), whose bounds must be finite.
    """

    low: Any
    high: Any
    shape: tuple[int, ...] = ()
    dtype: Any = np.float32

    def __post_init__(self) -> None:
        dtype = np.dtype(self.dtype)
        if not (np.issubdtype(dtype, np.floating) or np.issubdtype(dtype, np.integer)):
            raise TypeError(f"Box: dtype must be a floating or integer dtype, got {dtype}.")
        if np.issubdtype(dtype, np.integer) and not (
            np.all(np.isfinite(np.asarray(self.low, np.float64)))
            and np.all(np.isfinite(np.asarray(self.high, np.float64)))
        ):
            raise ValueError(f"Box: an integer Box ({dtype}) needs finite bounds.")
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
        if np.issubdtype(self.dtype, np.integer):
            low = jnp.broadcast_to(jnp.asarray(self.low, jnp.int32), shape)
            high = jnp.broadcast_to(jnp.asarray(self.high, jnp.int32), shape)
            return jax.random.randint(key, shape, low, high + 1, jnp.int32).astype(self.dtype)
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
        kind = jnp.integer if np.issubdtype(self.dtype, np.integer) else jnp.floating
        if x.shape != self.shape or not jnp.issubdtype(x.dtype, kind):
            return jnp.asarray(False)
        return jnp.all((x >= self.low) & (x <= self.high))

    def describe(self) -> str:
        """A short human-readable description, used in error messages."""
        return repr(self)


@dataclasses.dataclass(frozen=True)
class Dict:
    """Named sub-spaces; a value is a dict with the same keys.

    Pixel environments observe ``{"pixels/<camera>": uint8 (H, W, C), "state": float32
    (n,)}`` (docs/design.md §6).

    Attributes:
        spaces: The sub-spaces by name, kept in sorted key order (as JAX orders dict
            leaves).
    """

    spaces: Any

    def __post_init__(self) -> None:
        if not isinstance(self.spaces, Mapping) or not self.spaces:
            raise TypeError(f"Dict: spaces must be a non-empty mapping, got {self.spaces!r}.")
        for name, space in self.spaces.items():
            if not isinstance(name, str) or not isinstance(space, (Box, Discrete, Dict)):
                raise TypeError(
                    f"Dict: every entry must map a str to a Box, Discrete or Dict, got "
                    f"{name!r}: {space!r}."
                )
        object.__setattr__(self, "spaces", dict(sorted(self.spaces.items())))

    def __hash__(self) -> int:
        return hash(tuple(self.spaces.items()))

    def __getitem__(self, name: str) -> Space:
        return self.spaces[name]

    def keys(self) -> Any:
        """The names of the sub-spaces, sorted."""
        return self.spaces.keys()

    def sample(self, key: jax.Array, batch_shape: tuple[int, ...] = ()) -> dict[str, Any]:
        """One draw per sub-space, each with an independent key."""
        keys = jax.random.split(key, len(self.spaces))
        return {
            name: space.sample(k, batch_shape)
            for k, (name, space) in zip(keys, self.spaces.items(), strict=True)
        }

    def contains(self, x: Any) -> jax.Array:
        """Whether ``x`` is a mapping with exactly these keys, each value contained."""
        if not isinstance(x, Mapping) or set(x) != set(self.spaces):
            return jnp.asarray(False)
        inside = [space.contains(x[name]) for name, space in self.spaces.items()]
        return jnp.all(jnp.stack(inside))

    def describe(self) -> str:
        """A short human-readable description, used in error messages."""
        parts = ", ".join(f"{name!r}: {space.describe()}" for name, space in self.spaces.items())
        return "Dict({" + parts + "})"


Space = Discrete | Box | Dict
"""Any rollax space."""


def is_image_key(key: str) -> bool:
    """Whether an observation key names an image (``"pixels/..."``, docs/design.md §6)."""
    return key.startswith("pixels/")


def observation_spec(space: Space, who: str) -> Any:
    """What a network reads from observations of ``space``: shapes and dtypes.

    A 1-D :class:`Box` gives a float32 ``jax.ShapeDtypeStruct``. A :class:`Dict` gives a
    dict of them: ``"pixels/..."`` entries as ``(H, W, C)`` images in their own dtype
    (uint8 images are scaled inside the networks), the other entries as float32 vectors.

    Args:
        space: An environment's observation space.
        who: Who asks, for messages (``"make_ppo: PPO"``).

    Raises:
        ValueError: any other space, naming what is supported.
    """
    if isinstance(space, Box) and len(space.shape) == 1:
        return jax.ShapeDtypeStruct(space.shape, jnp.float32)
    if not isinstance(space, Dict):
        raise ValueError(
            f"{who} takes flat float vectors or dicts of images and vectors "
            f"(rollax.spaces.Dict); the environment observes {space!r}."
        )
    spec = {}
    for key, sub in space.spaces.items():
        image = is_image_key(key)
        if not isinstance(sub, Box) or len(sub.shape) != (3 if image else 1):
            raise ValueError(
                f"{who} reads 'pixels/...' observations as (H, W, C) images and the others as "
                f"1-D vectors; observation {key!r} is {sub!r}."
            )
        spec[key] = jax.ShapeDtypeStruct(sub.shape, sub.dtype if image else jnp.float32)
    return spec
