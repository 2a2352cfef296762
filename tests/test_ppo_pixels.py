"""PPO on dict observations: images and vectors, asymmetric keys, augmentation."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from rollax.agents.ppo import PPOConfig, make_ppo
from rollax.envs import VecEnv
from rollax.envs.pixel_cartpole import PixelCartPole
from rollax.envs.wrappers import FrameStack


def _pixel_env(num_envs=8, **options):
    return VecEnv(FrameStack(PixelCartPole(16, 32, **options), 2), num_envs=num_envs)


def test_dict_observations_through_the_update_bit_identically_in_pieces():
    config = PPOConfig(
        num_envs=8,
        num_steps=16,
        total_steps=8 * 16 * 4,
        hidden_sizes=(32,),
        activation="relu",
        augment_pixels=True,
        shift_pad=2,
        normalize_obs=True,
        critic_keys=("pixels/fixed", "state"),
        actor_keys=("pixels/fixed",),
    )
    agent = make_ppo(config, _pixel_env(state=True))
    state = agent.init(jax.random.key(0))
    assert set(state.obs) == {"pixels/fixed", "state"}
    assert set(state.obs_stats) == {"state"}  # images are scaled, not normalized
    whole, metrics = agent.run(state, 8 * 16 * 2)
    half, _ = agent.run(state, 8 * 16)
    half, _ = agent.run(half, 8 * 16)
    for a, b in zip(jax.tree.leaves(whole.params), jax.tree.leaves(half.params), strict=True):
        np.testing.assert_array_equal(a, b)
    moved = [
        float(np.abs(np.asarray(a) - np.asarray(b)).max())
        for a, b in zip(jax.tree.leaves(state.params), jax.tree.leaves(whole.params), strict=True)
    ]
    assert max(moved) > 0  # the update changed the encoder and heads
    assert all(np.isfinite(np.asarray(v)).all() for v in metrics.values())
    assert whole.obs_stats["state"].count[0] > state.obs_stats["state"].count[0]
    returns = agent.evaluate(whole, jax.random.key(1), num_episodes=2)
    assert returns.shape == (1, 2)


def test_the_dict_pipeline_learns_from_its_vector_entry():
    """PPO through dict observations learns CartPole from the state entry (the images are
    there, unread): a check of the plumbing, cheap enough for every run."""
    config = PPOConfig(
        num_envs=16,
        num_steps=64,
        total_steps=16 * 64 * 40,
        hidden_sizes=(64,),
        activation="relu",
        learning_rate=1e-3,
        actor_keys=("state",),
        critic_keys=("state",),
    )
    env = VecEnv(PixelCartPole(8, 8, state=True), num_envs=16)
    agent = make_ppo(config, env)
    state, _ = agent.run(agent.init(jax.random.key(0)), config.total_steps)
    returns = agent.evaluate(state, jax.random.key(1), num_episodes=16)
    assert float(returns.mean()) >= 150.0  # random play averages about 22


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"actor_keys": ("pixels/top",)}, "PPOConfig.actor_keys names \\['pixels/top'\\]"),
        ({"critic_keys": ("velocity",)}, "PPOConfig.critic_keys names \\['velocity'\\]"),
        ({"shift_pad": -1}, "shift_pad must be an integer >= 0"),
    ],
)
def test_bad_keys_are_refused_with_the_observed_keys(changes, message):
    config = PPOConfig(num_envs=8, num_steps=16, total_steps=8 * 16, **changes)
    with pytest.raises(ValueError, match=message):
        make_ppo(config, _pixel_env())


@pytest.mark.slow
def test_ppo_learns_pixel_cartpole_from_images_alone():
    # The preset (16x64 fixed camera, two stacked frames, images only) on a small budget:
    # a random policy averages about 22; this reaches well above it.
    from rollax.agents.ppo import PRESETS

    config = PRESETS["PixelCartPole-v1"].replace(total_steps=65_536)
    agent = make_ppo(config, "PixelCartPole-v1")
    assert set(agent.env.observation_space.spaces) == {"pixels/fixed"}
    state = agent.init(jax.random.key(0))
    state, _ = agent.run(state, config.total_steps)
    returns = np.asarray(agent.evaluate(state, jax.random.key(1), 32, False))
    assert returns.mean() >= 50.0, returns.mean()
