"""Image augmentation for pixel observations."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from rollax.types import PRNGKey


def random_shift(key: PRNGKey, obs: Any, pad: int = 4) -> Any:
    """DrQ's random shift: move each image's content by up to ``pad`` pixels.

    Each image is padded by ``pad`` pixels (repeating its edges) and cropped back to its
    size at a random offset.

    Args:
        key: Random key; every image gets its own offset.
        obs: An image batch ``(..., H, W, C)`` or a dict observation, whose ``"pixels/..."``
            entries are shifted (each camera independently) and other entries returned
            untouched.
        pad: Largest shift in pixels, >= 0.

    Returns:
        ``obs`` with shifted images, same shapes and dtypes.
    """
    if isinstance(pad, bool) or not isinstance(pad, int) or pad < 0:
        raise ValueError(f"pad must be an integer >= 0 (pixels), got {pad!r}")
    if isinstance(obs, dict):
        names = sorted(k for k in obs if k.startswith("pixels/"))
        keys = dict(zip(names, jax.random.split(key, max(len(names), 1)), strict=False))
        return {k: random_shift(keys[k], v, pad) if k in keys else v for k, v in obs.items()}
    images = jnp.asarray(obs)
    if images.ndim < 3:
        raise ValueError(f"random_shift needs images (..., H, W, C), got shape {images.shape}")
    if pad == 0:
        return images
    h, w, c = images.shape[-3:]
    flat = images.reshape((-1, h, w, c))
    offsets = jax.random.randint(key, (flat.shape[0], 2), 0, 2 * pad + 1)
    padded = jnp.pad(flat, ((0, 0), (pad, pad), (pad, pad), (0, 0)), mode="edge")

    def crop(image: jax.Array, offset: jax.Array) -> jax.Array:
        return jax.lax.dynamic_slice(image, (offset[0], offset[1], 0), (h, w, c))

    return jax.vmap(crop)(padded, offsets).reshape(images.shape)
