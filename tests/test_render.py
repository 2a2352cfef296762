"""Rendering in JAX: every builtin environment draws its state, batched and under jit."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import rollax
from rollax.envs.classic.cartpole import CartPoleState
from rollax.envs.classic.pendulum import PendulumState
from rollax.spaces import Box, Discrete


# PixelMaze-v0 renders as Maze-v0 does (the same method).
@pytest.mark.parametrize("env_id", [e for e in rollax.registered_envs() if e != "PixelMaze-v0"])
def test_every_builtin_env_renders_a_batch_under_jit(env_id):
    env = rollax.make(env_id, num_envs=3)
    assert env.can_render
    state, _ = env.reset(jax.random.key(0))
    frames = np.asarray(jax.jit(env.render)(state))
    assert frames.dtype == np.uint8 and frames.ndim == 4 and frames.shape[0] == 3
    assert frames.shape[-1] == 3 and frames.min() < frames.max()
    single = rollax.make(env_id)
    one_state, _ = single.reset(jax.random.key(0))
    assert single.render(one_state).shape == frames.shape[1:]


def _dark_columns(frame: np.ndarray) -> np.ndarray:
    """Columns with dark pixels in the rows of the cart's body (y in [-0.1, 0.05])."""
    return np.nonzero((frame[88:96].max(axis=-1) < 60).any(axis=0))[0]


def test_cartpole_picture_follows_the_cart_and_the_pole():
    env = rollax.make("CartPole-v1").env
    params = env.default_params

    def picture(x, theta):
        state = CartPoleState(jnp.float32(x), jnp.float32(0), jnp.float32(theta), jnp.float32(0))
        return np.asarray(env.render(state, params))

    left, right = picture(-1.0, 0.0), picture(1.0, 0.0)
    # The cart body (dark) moves by 2 world units = 2 * 288 / 4.8 = 120 pixels.
    shift = np.median(_dark_columns(right)) - np.median(_dark_columns(left))
    assert abs(shift - 120) <= 2

    # A pole leaning right puts pole-coloured pixels right of the cart's centre column.
    # Its tip is sin(0.2) * 1.0 world units = 12 pixels off the centre column (144).
    def pole_columns(theta):
        pole = np.all(np.abs(picture(0.0, theta).astype(int) - [204, 153, 102]) < 30, axis=-1)
        return np.nonzero(pole.any(axis=0))[0]

    assert 144 + 10 <= pole_columns(0.2).max() <= 144 + 16
    assert 144 - 17 <= pole_columns(-0.2).min() <= 144 - 11


def test_pendulum_upright_draws_above_the_pivot():
    env = rollax.make("Pendulum-v1").env
    params = env.default_params
    up = np.asarray(env.render(PendulumState(jnp.float32(0), jnp.float32(0)), params))
    down = np.asarray(env.render(PendulumState(jnp.float32(np.pi), jnp.float32(0)), params))
    red = lambda f: (f[..., 0] > 150) & (f[..., 1] < 120)  # noqa: E731
    assert red(up)[:50].sum() > 100 and red(up)[80:].sum() == 0
    assert red(down)[80:].sum() > 100 and red(down)[:50].sum() == 0


class _Blind(rollax.Environment):
    """An environment without a picture."""

    default_params = rollax.EnvParams()
    observation_space = Box(0.0, 1.0, (1,))
    action_space = Discrete(2)

    def reset_env(self, key, params):
        return jnp.zeros((), jnp.float32)

    def step_env(self, state, action, params):
        return state, jnp.float32(0), jnp.bool_(False)

    def observe(self, state, params):
        return state[None]


def test_an_env_without_render_says_so():
    env = rollax.VecEnv(_Blind(), 2)
    state, _ = env.reset(jax.random.key(0))
    assert not env.can_render
    with pytest.raises(TypeError, match="_Blind cannot render: it defines no render"):
        env.render(state)


def test_antialiased_shapes_cover_their_area_and_blend():
    from rollax import render as rr

    view = rr.View(0.0, 8.0, 0.0, 4.0, 4, 8)  # one world unit per pixel
    # A 2.5 x 1.5 box placed off the pixel grid covers exactly its area in pixels.
    cover = np.asarray(rr.box(view, (3.3, 2.1), (1.25, 0.75), antialias=True))
    assert cover.dtype == np.float32 and cover.min() == 0.0 and cover.max() <= 1.0
    np.testing.assert_allclose(cover.sum(), 2.5 * 1.5, rtol=1e-5)
    hard = np.asarray(rr.box(view, (3.3, 2.1), (1.25, 0.75)))
    assert hard.dtype == bool and 0.0 < cover[hard].min() < 1.0  # partly covered pixels
    # Blending: a half-covered pixel is halfway between the background and the colour.
    frame = rr.draw(rr.canvas(view), jnp.full((4, 8), 0.5, jnp.float32), (0.0, 0.0, 0.0))
    np.testing.assert_allclose(np.asarray(frame), 0.5)
    # A horizontal line half a pixel thick on the edge between rows 1 and 2: each of the
    # two rows is a quarter covered along it, and its coverage sums to about its area
    # (a 7 x 0.5 band with round ends).
    line = np.asarray(rr.segment(view, (0.5, 2.0), (7.5, 2.0), 0.25, antialias=True))
    np.testing.assert_allclose(line[1:3, 1:-1], 0.25)
    assert line[0].max() == 0.0 and line[3].max() == 0.0
    np.testing.assert_allclose(line.sum(), 7.0 * 0.5 + np.pi * 0.25**2, rtol=0.1)
    # Thinner than a pixel and centred on one: at most its width's fraction.
    thin = np.asarray(rr.segment(view, (0.5, 2.5), (7.5, 2.5), 0.25, antialias=True))
    np.testing.assert_allclose(thin[1, 1:-1], 0.5)
