"""Pixel CartPole: CartPole's dynamics exactly, observed through rendered cameras."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import rollax
from _rollouts import replay_actions
from rollax import spaces


def test_dynamics_are_cartpoles_for_the_same_keys_and_actions():
    actions = jax.random.randint(jax.random.key(1), (120, 6), 0, 2, jnp.int32)
    params = rollax.make("CartPole-v1").default_params.replace(max_episode_steps=40)
    for strategy in ("every_step", "pool"):
        state_env = rollax.make("CartPole-v1", num_envs=6, reset_strategy=strategy)
        pixel_env = rollax.make(
            "PixelCartPole-v1",
            num_envs=6,
            reset_strategy=strategy,
            state=True,
            height=16,
            width=32,
        )
        ref = replay_actions(state_env, jax.random.key(0), actions, params)
        pix = replay_actions(pixel_env, jax.random.key(0), actions, params)
        np.testing.assert_array_equal(pix.obs["state"], ref.obs)
        np.testing.assert_array_equal(pix.final_obs["state"], ref.final_obs)
        for name in ("reward", "terminated", "truncated"):
            np.testing.assert_array_equal(getattr(pix, name), getattr(ref, name))
        assert ref.terminated.any() and ref.truncated.any()  # resets happened, both kinds


def test_final_obs_images_are_the_last_frame_not_the_new_episode():
    env = rollax.make("PixelCartPole-v1", num_envs=4, cameras=("fixed", "follow"), state=True)
    ts = replay_actions(env, jax.random.key(0), jnp.ones((40, 4), jnp.int32))
    done = ts.terminated | ts.truncated
    assert done.any()
    for camera in ("pixels/fixed", "pixels/follow"):
        differs = (ts.final_obs[camera] != ts.obs[camera]).any(axis=(2, 3, 4))
        np.testing.assert_array_equal(differs, done)  # only on reset steps


def test_rendering_is_deterministic_and_the_cart_moves():
    env = rollax.make("PixelCartPole-v1", cameras=("fixed", "follow"), height=32, width=64)
    state, ts = env.reset(jax.random.key(3))
    again = env.env.observe(state.core, env.default_params)
    for name, image in ts.obs.items():
        assert image.dtype == jnp.uint8 and image.shape == (32, 64, 3)
        np.testing.assert_array_equal(again[name], image)
    assert env.observation_space.contains(ts.obs)

    def cart_column(image):
        dark = (np.asarray(image) < 40).all(-1)  # the cart and the track line
        rows = dark.sum(1) < dark.shape[1] // 2  # not the track line, which spans the image
        return np.flatnonzero(dark[rows].any(0)).mean()

    def look(x):
        return env.env.observe(state.core.replace(x=jnp.float32(x)), env.default_params)

    left, right = look(-1.0), look(1.0)
    # Fixed camera: 2 world units are 2 / 4.8 of the width.
    shift = cart_column(right["pixels/fixed"]) - cart_column(left["pixels/fixed"])
    assert abs(shift - 64 * 2 / 4.8) <= 1.5
    # Follow camera: the cart stays in the middle, the track marks move under it.
    assert cart_column(right["pixels/follow"]) == cart_column(left["pixels/follow"])
    # Marks every half unit: 2 units apart the views match, a quarter unit apart they do not.
    np.testing.assert_array_equal(left["pixels/follow"], right["pixels/follow"])
    marks = look(-1.0 + 0.25)["pixels/follow"]  # half a mark spacing: the marks shift
    assert (marks != left["pixels/follow"]).any()


PIXEL = 4.8 / 64  # world units per pixel of the default fixed camera


def _fixed_view(antialias: bool, x: float) -> np.ndarray:
    """The default fixed camera's image of the cart at ``x`` with an upright pole."""
    env = rollax.make("PixelCartPole-v1", antialias=antialias)
    state, _ = env.reset(jax.random.key(0))
    core = state.core.replace(x=jnp.float32(x), theta=jnp.float32(0.0))
    return np.asarray(env.env.observe(core, env.default_params)["pixels/fixed"])


def _dark_centre(image: np.ndarray) -> float:
    """Darkness-weighted mean column above the track line (the cart and the pole)."""
    darkness = 255.0 - image[:-2, :, 0].astype(float)
    return float((darkness * np.arange(image.shape[1])).sum() / darkness.sum())


def test_antialiasing_shows_a_move_of_a_quarter_of_a_pixel():
    # The cart's left edge 0.2 of a pixel past a pixel's edge: moving a quarter of a pixel,
    # no edge of the cart or the pole crosses a pixel centre.
    x = (30 + 0.2) * PIXEL - 2.4 + 0.2
    before, after = _fixed_view(True, x), _fixed_view(True, x + PIXEL / 4)
    assert 0.15 <= _dark_centre(after) - _dark_centre(before) <= 0.35
    # With hard edges the same move leaves every pixel as it was.
    np.testing.assert_array_equal(_fixed_view(False, x), _fixed_view(False, x + PIXEL / 4))


def test_spaces_for_images_and_dicts():
    image = spaces.Box(0, 255, (4, 5, 3), np.uint8)
    draw = image.sample(jax.random.key(0), (7,))
    assert draw.dtype == jnp.uint8 and draw.shape == (7, 4, 5, 3)
    assert bool(image.contains(draw[0]))
    assert not bool(image.contains(np.zeros((4, 5, 3), np.float32)))
    d = spaces.Dict({"state": spaces.Box(-1.0, 1.0, (2,)), "pixels/a": image})
    assert list(d.keys()) == ["pixels/a", "state"]
    x = d.sample(jax.random.key(1), (3,))
    assert x["pixels/a"].shape == (3, 4, 5, 3) and x["state"].shape == (3, 2)
    assert bool(d.contains(jax.tree.map(lambda v: v[0], x)))
    assert not bool(d.contains({"state": x["state"][0]}))
    with pytest.raises(TypeError, match="non-empty mapping"):
        spaces.Dict({})


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"cameras": ("top",)}, "cameras must be a non-empty selection of"),
        ({"cameras": ("fixed", "fixed")}, "without repeats"),
        ({"height": 4}, "height must be an integer >= 8"),
        ({"width": 64.0}, "width must be an integer >= 8"),
    ],
)
def test_bad_camera_options_are_refused(options, message):
    with pytest.raises(ValueError, match=message):
        rollax.make("PixelCartPole-v1", **options)
