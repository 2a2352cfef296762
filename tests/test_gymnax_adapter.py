"""gymnax environments through rollax.make: rollax's resets, truncation and final_obs."""

from __future__ import annotations

import gymnax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import rollax
from rollax.adapters.gymnax import OBS_FROM_STATE

pytestmark = pytest.mark.extra("gymnax")


def test_gymnax_cartpole_steps_like_gymnax_itself():
    env = rollax.make("gymnax/CartPole-v1")
    ours = env.env
    reference, ref_params = gymnax.make("CartPole-v1")
    state = ours.reset_env(jax.random.key(0), env.default_params)
    for t in range(40):
        action = jnp.int32(t % 2)
        k = jax.random.split(state.key)[1]  # the key the wrapper hands gymnax
        with jax.numpy_dtype_promotion("standard"):  # gymnax is not strict-promotion clean
            want_obs, _, want_reward, want_done, _ = reference.step_env(
                k, state.inner, action, ref_params
            )
        state, reward, terminated = ours.step_env(state, action, env.default_params)
        np.testing.assert_allclose(ours.observe(state, env.default_params), want_obs, rtol=1e-6)
        assert float(reward) == float(want_reward) and bool(terminated) == bool(want_done)


@pytest.mark.parametrize("env_id", sorted(OBS_FROM_STATE))
def test_observations_computed_from_the_state_are_those_gymnax_returns(env_id):
    # The adapter keeps no observation in the state of these ids: gymnax's get_obs must
    # give what its reset and step return, over a rollout with episode ends.
    env = rollax.make(f"gymnax/{env_id}", pixels=False)
    ours, params = env.env, env.default_params
    reference, ref_params = gymnax.make(env_id)
    key = jax.random.key(0)
    with jax.numpy_dtype_promotion("standard"):
        want, inner = reference.reset_env(key, ref_params)
    state = ours.reset_env(key, params).replace(inner=inner)
    assert state.obs is None
    for t in range(60):
        np.testing.assert_array_equal(
            np.asarray(ours.observe(state, params)), np.asarray(want, np.float32), err_msg=str(t)
        )
        action = env.action_space.sample(jax.random.key(t))
        with jax.numpy_dtype_promotion("standard"):
            want, inner, _, done, _ = reference.step_env(
                jax.random.key(100 + t), state.inner, action, ref_params
            )
            if bool(done):
                want, inner = reference.reset_env(jax.random.key(200 + t), ref_params)
        state = state.replace(inner=inner)


def test_time_limit_is_truncation_and_every_episode_starts_fresh():
    env = rollax.make("gymnax/CartPole-v1", num_envs=4)
    params = env.default_params.replace(max_episode_steps=10)
    state, ts = env.reset(jax.random.key(0), params)
    starts = [np.asarray(ts.obs)]
    step = jax.jit(env.step)
    for t in range(30):
        state, ts = step(state, jnp.full(4, t % 2, jnp.int32), params)
        if bool(ts.done.any()):
            assert bool(ts.truncated.all()) and not bool(ts.terminated.any())
            assert not np.array_equal(np.asarray(ts.final_obs), np.asarray(ts.obs))
            starts.append(np.asarray(ts.obs))
    assert len(starts) == 4  # the first episode and three fresh ones
    flat = np.concatenate(starts)
    assert len({tuple(row) for row in flat}) == len(flat)  # no start repeats


def test_minatar_runs_batched_under_jit_with_image_observations():
    env = rollax.make("gymnax/Breakout-MinAtar", num_envs=8)
    space = env.observation_space["pixels/board"]
    assert space.shape == (10, 10, 4) and space.dtype == np.uint8
    state, ts = env.reset(jax.random.key(0))

    @jax.jit
    def rollout(state, key):
        def body(state, key):
            state, ts = env.step(state, env.sample_actions(key))
            return state, ts.done.sum()

        return jax.lax.scan(body, state, jax.random.split(key, 300))

    state, dones = rollout(state, jax.random.key(1))
    board = ts.obs["pixels/board"]
    assert board.shape == (8, 10, 10, 4) and board.dtype == jnp.uint8
    assert set(np.unique(np.asarray(board))) <= {0, 255}
    assert int(dones.sum()) > 0


def test_minatar_image_is_gymnax_board_scaled_to_255():
    env = rollax.make("gymnax/Breakout-MinAtar")
    reference, ref_params = gymnax.make("Breakout-MinAtar")
    state = env.env.reset_env(jax.random.key(3), env.default_params)
    for t in range(20):
        k = jax.random.split(state.key)[1]
        action = jnp.int32(t % 3)
        with jax.numpy_dtype_promotion("standard"):
            want, *_ = reference.step_env(k, state.inner, action, ref_params)
        state, _, _ = env.env.step_env(state, action, env.default_params)
        got = env.env.observe(state, env.default_params)["pixels/board"]
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want, np.uint8) * 255)
    flat = rollax.make("gymnax/Breakout-MinAtar", pixels=False)
    assert flat.observation_space.shape == (10, 10, 4)
    assert flat.observation_space.dtype == np.float32


def test_pixels_option_is_checked():
    with pytest.raises(ValueError, match="pixels=True needs a 3-D observation"):
        rollax.make("gymnax/CartPole-v1", pixels=True)
    with pytest.raises(TypeError, match="pixels must be None, True or False"):
        rollax.make("gymnax/Breakout-MinAtar", pixels="yes")


def test_unknown_gymnax_id_lists_close_matches():
    with pytest.raises(ValueError, match="Did you mean 'gymnax/Breakout-MinAtar'"):
        rollax.make("gymnax/Breakout-MinAtr")


def test_states_and_params_are_strongly_typed_so_nothing_compiles_twice():
    # gymnax builds them from Python numbers; a weak leaf made strong by a step would change
    # a compiled program's signature between calls.
    env = rollax.make("gymnax/Breakout-MinAtar", num_envs=4, reset_strategy="pool")
    state, _ = env.reset(jax.random.key(0))
    state, _ = jax.jit(env.step)(state, jnp.zeros(4, jnp.int32))
    leaves = jax.tree_util.tree_leaves_with_path((state, env.default_params))
    weak = [jax.tree_util.keystr(p) for p, x in leaves if jax.typeof(jnp.asarray(x)).weak_type]
    assert not weak
