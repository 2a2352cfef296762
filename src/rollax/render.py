"""A small rasterizer in ``jax.numpy``: shapes drawn by testing every pixel centre.

No GPU, OpenGL or display is needed, and everything is ``jit``/``vmap``-able, so a batch of
environments (or a whole episode of states) renders in one call. A frame is float32
``(H, W, 3)`` in ``[0, 1]`` while drawing and uint8 ``(H, W, 3)`` when finished.

Coordinates are world units: a :class:`View` maps the rectangle ``[x_min, x_max] x
[y_min, y_max]`` onto the image, ``y`` pointing up.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

__all__ = [
    "View",
    "box",
    "canvas",
    "disk",
    "draw",
    "segment",
    "to_uint8",
]

Color = tuple[float, float, float]


class View(NamedTuple):
    """The world rectangle an image shows, and the image's size in pixels."""

    x_min: float
    x_max: float
    y_min: float
    y_max: float
    height: int
    width: int

    def grid(self) -> tuple[jax.Array, jax.Array]:
        """World coordinates of the pixel centres: ``(X, Y)``, float32 ``(H, W)`` each."""
        xs = self.x_min + (jnp.arange(self.width, dtype=jnp.float32) + 0.5) * (
            (self.x_max - self.x_min) / self.width
        )
        ys = self.y_max - (jnp.arange(self.height, dtype=jnp.float32) + 0.5) * (
            (self.y_max - self.y_min) / self.height
        )
        return jnp.meshgrid(xs, ys)


def canvas(view: View, color: Color = (1.0, 1.0, 1.0)) -> jax.Array:
    """A blank frame, float32 ``(H, W, 3)``."""
    return jnp.broadcast_to(jnp.asarray(color, jnp.float32), (view.height, view.width, 3))


def draw(frame: jax.Array, mask: jax.Array, color: Color) -> jax.Array:
    """Paint ``color`` where ``mask`` (bool ``(H, W)``) holds."""
    return jnp.where(mask[..., None], jnp.asarray(color, jnp.float32), frame)


def box(view: View, center: tuple, half_size: tuple) -> jax.Array:
    """Mask of an axis-aligned rectangle."""
    x, y = view.grid()
    return (jnp.abs(x - center[0]) <= half_size[0]) & (jnp.abs(y - center[1]) <= half_size[1])


def disk(view: View, center: tuple, radius: float | jax.Array) -> jax.Array:
    """Mask of a filled circle."""
    x, y = view.grid()
    return (x - center[0]) ** 2 + (y - center[1]) ** 2 <= radius**2


def segment(view: View, start: tuple, end: tuple, half_width: float | jax.Array) -> jax.Array:
    """Mask of a thick line segment with round ends (a capsule)."""
    x, y = view.grid()
    dx, dy = end[0] - start[0], end[1] - start[1]
    length2 = jnp.maximum(dx * dx + dy * dy, 1e-12)
    t = jnp.clip(((x - start[0]) * dx + (y - start[1]) * dy) / length2, 0.0, 1.0)
    px, py = start[0] + t * dx - x, start[1] + t * dy - y
    return px * px + py * py <= half_width**2


def to_uint8(frame: jax.Array) -> jax.Array:
    """float32 ``[0, 1]`` -> uint8 ``[0, 255]``."""
    return jnp.round(jnp.clip(frame, 0.0, 1.0) * 255.0).astype(jnp.uint8)
