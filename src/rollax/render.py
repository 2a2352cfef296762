"""A small rasterizer in ``jax.numpy``: shapes drawn by testing every pixel centre.

No GPU, OpenGL or display is needed, and everything is ``jit``/``vmap``-able, so a batch of
environments (or a whole episode of states) renders in one call. A frame is float32
``(H, W, 3)`` in ``[0, 1]`` while drawing and uint8 ``(H, W, 3)`` when finished.

Coordinates are world units: a :class:`View` maps the rectangle ``[x_min, x_max] x
[y_min, y_max]`` onto the image, ``y`` pointing up.

A shape is either a bool mask (the pixel centre is inside) or, with ``antialias=True``, a
float32 coverage in ``[0, 1]`` (about the fraction of the pixel the shape covers, from its
signed distance to the pixel centre). Coverage keeps sub-pixel motion visible: on a small
image a cart that moves a third of a pixel changes the picture, where a mask would not.
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

    @property
    def pixel_size(self) -> tuple[float, float]:
        """One pixel's width and height in world units."""
        return (self.x_max - self.x_min) / self.width, (self.y_max - self.y_min) / self.height


def canvas(view: View, color: Color = (1.0, 1.0, 1.0)) -> jax.Array:
    """A blank frame, float32 ``(H, W, 3)``."""
    return jnp.broadcast_to(jnp.asarray(color, jnp.float32), (view.height, view.width, 3))


def draw(frame: jax.Array, mask: jax.Array, color: Color) -> jax.Array:
    """Paint ``color`` where ``mask`` holds.

    ``mask`` is bool ``(H, W)`` (paint or keep) or float32 ``(H, W)`` coverage in ``[0, 1]``
    (blend: ``frame + coverage * (color - frame)``).
    """
    color = jnp.asarray(color, jnp.float32)
    if mask.dtype == jnp.bool_:
        return jnp.where(mask[..., None], color, frame)
    return frame + mask[..., None] * (jnp.broadcast_to(color, frame.shape) - frame)


def _coverage(inside: jax.Array, pixel: float) -> jax.Array:
    """Coverage of a pixel whose centre is ``inside`` world units within an edge (<0: out)."""
    return jnp.clip(inside / pixel + 0.5, 0.0, 1.0)


def box(view: View, center: tuple, half_size: tuple, antialias: bool = False) -> jax.Array:
    """An axis-aligned rectangle: bool mask, or float32 coverage (exact area) if ``antialias``."""
    x, y = view.grid()
    inside_x = half_size[0] - jnp.abs(x - center[0])
    inside_y = half_size[1] - jnp.abs(y - center[1])
    if not antialias:
        return (inside_x >= 0) & (inside_y >= 0)
    pw, ph = view.pixel_size
    # Separable: the covered fraction across times the covered fraction up. A shape
    # narrower than a pixel covers at most its width's fraction.
    across = jnp.minimum(_coverage(inside_x, pw), 2 * half_size[0] / pw)
    up = jnp.minimum(_coverage(inside_y, ph), 2 * half_size[1] / ph)
    return across * up


def disk(
    view: View, center: tuple, radius: float | jax.Array, antialias: bool = False
) -> jax.Array:
    """A filled circle: bool mask, or float32 coverage if ``antialias``."""
    x, y = view.grid()
    if not antialias:
        return (x - center[0]) ** 2 + (y - center[1]) ** 2 <= radius**2
    distance = jnp.sqrt((x - center[0]) ** 2 + (y - center[1]) ** 2)
    pixel = jnp.minimum(*view.pixel_size)
    return jnp.minimum(_coverage(radius - distance, pixel), 2 * radius / pixel)


def segment(
    view: View,
    start: tuple,
    end: tuple,
    half_width: float | jax.Array,
    antialias: bool = False,
) -> jax.Array:
    """A thick line segment with round ends (a capsule): bool mask, or float32 coverage."""
    x, y = view.grid()
    dx, dy = end[0] - start[0], end[1] - start[1]
    length2 = jnp.maximum(dx * dx + dy * dy, 1e-12)
    t = jnp.clip(((x - start[0]) * dx + (y - start[1]) * dy) / length2, 0.0, 1.0)
    px, py = start[0] + t * dx - x, start[1] + t * dy - y
    if not antialias:
        return px * px + py * py <= half_width**2
    pixel = jnp.minimum(*view.pixel_size)
    # A line thinner than a pixel covers at most its width's fraction.
    return jnp.minimum(
        _coverage(half_width - jnp.sqrt(px * px + py * py), pixel), 2 * half_width / pixel
    )


def to_uint8(frame: jax.Array) -> jax.Array:
    """float32 ``[0, 1]`` -> uint8 ``[0, 255]``."""
    return jnp.round(jnp.clip(frame, 0.0, 1.0) * 255.0).astype(jnp.uint8)
