"""CartPole seen through cameras: the same dynamics, observed as rendered images.

The images are drawn with :mod:`rollax.render` (pure ``jax.numpy``), so a batch renders
under ``vmap`` on a CPU as on an accelerator. Rendering happens only in ``observe``: a
wrapper that advances the dynamics several times (action repeat) renders once.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from rollax import render as rr
from rollax.envs.classic.cartpole import CartPole, CartPoleParams, CartPoleState
from rollax.spaces import Box, Dict

CAMERAS = ("fixed", "follow")
"""``fixed`` shows the whole track ``[-2.4, 2.4]``; ``follow`` is centred on the cart and
framed to fit cart and pole, with track marks every half unit so that motion stays
visible. Both keep world units square (the same scale across and up)."""


class PixelCartPole(CartPole):
    """CartPole whose observation is ``{"pixels/<camera>": uint8 (H, W, 3)[, "state"]}``.

    Dynamics, rewards, termination and resets are exactly :class:`CartPole`'s (same keys
    and actions give the same states). Rendering costs ``O(H * W)`` per camera per step.

    The default image is a 16 x 64 strip: the fixed camera then shows the whole track's
    width at 13 pixels per unit, the pole (one unit long) from its base to its tip, and the
    top of the cart. A 32 x 64 image draws the pole at the same size but costs PPO's encoder
    twice the time for no faster learning (the Environments page, Pixels).

    Args:
        height: Image height in pixels.
        width: Image width in pixels.
        cameras: Which of :data:`CAMERAS` to render, each under ``"pixels/<camera>"``.
        state: Also observe the 4-float state vector under ``"state"``.
        antialias: Draw cart and pole with coverage-weighted (antialiased) edges, so that
            a move of a fraction of a pixel changes the image. On the 16 x 64 default a
            pixel is 0.075 units, and a hard-edged pole shifts by whole pixels only.
    """

    def __init__(
        self,
        height: int = 16,
        width: int = 64,
        cameras: Sequence[str] = ("fixed",),
        state: bool = False,
        antialias: bool = True,
    ) -> None:
        for name, value in (("height", height), ("width", width)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 8:
                raise ValueError(f"{name} must be an integer >= 8 (pixels), got {value!r}")
        if isinstance(cameras, str):
            cameras = (cameras,)
        cameras = tuple(cameras)
        unknown = [c for c in cameras if c not in CAMERAS]
        if not cameras or unknown or len(set(cameras)) != len(cameras):
            raise ValueError(
                f"cameras must be a non-empty selection of {CAMERAS} without repeats, got "
                f"{cameras!r}"
            )
        for name, value in (("state", state), ("antialias", antialias)):
            if not isinstance(value, bool):
                raise TypeError(f"{name} must be a bool, got {value!r}")
        self.height, self.width = int(height), int(width)
        self.cameras = cameras
        self.include_state = state
        self.antialias = antialias

    @property
    def name(self) -> str:
        """``"PixelCartPole"``."""
        return "PixelCartPole"

    @property
    def observation_space(self) -> Dict:
        """uint8 images per camera, and the state Box if ``state``."""
        spaces = {
            f"pixels/{c}": Box(0, 255, (self.height, self.width, 3), np.uint8) for c in self.cameras
        }
        if self.include_state:
            spaces["state"] = super().observation_space
        return Dict(spaces)

    def observe(self, state: CartPoleState, params: CartPoleParams) -> dict[str, jax.Array]:
        """Render every camera (and copy the state vector if asked)."""
        obs = {f"pixels/{c}": self.camera(state, params, c) for c in self.cameras}
        if self.include_state:
            obs["state"] = super().observe(state, params)
        return obs

    def camera(self, state: CartPoleState, params: CartPoleParams, camera: str) -> jax.Array:
        """One camera's image of ``state``: uint8 ``(height, width, 3)``."""
        aspect = self.width / self.height
        if camera == "fixed":
            center, half = jnp.float32(0.0), 2.4
            low, high = 0.65 - half / aspect, 0.65 + half / aspect
        else:  # the track (y = -0.13) to the pole's tip (y = 1.1), with a margin
            low, high = -0.35, 1.35
            center, half = state.x, (high - low) / 2 * aspect
        view = rr.View(center - half, center + half, low, high, self.height, self.width)
        px = 2 * half / self.width  # one pixel in world units: thin parts stay visible
        base = (state.x, jnp.float32(0.1))
        tip = (
            state.x + 2 * params.length * jnp.sin(state.theta),
            0.1 + 2 * params.length * jnp.cos(state.theta),
        )
        frame = rr.canvas(view)
        frame = rr.draw(
            frame, rr.box(view, (center, -0.13), (half + 1.0, max(px, 0.01))), (0.0, 0.0, 0.0)
        )
        if camera == "follow":
            x, y = view.grid()
            marks = (jnp.abs(jnp.remainder(x + 0.25, 0.5) - 0.25) <= px) & (y < -0.1) & (y > -0.3)
            frame = rr.draw(frame, marks, (0.4, 0.4, 0.4))
        aa = self.antialias
        cart = rr.box(view, (state.x, 0.0), (0.2, 0.12), antialias=aa)
        frame = rr.draw(frame, cart, (0.1, 0.1, 0.1))
        pole = rr.segment(view, base, tip, max(0.05, px), antialias=aa)
        frame = rr.draw(frame, pole, (0.8, 0.6, 0.4))
        return rr.to_uint8(frame)
