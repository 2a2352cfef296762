"""Every reset draws a fresh initial state (DESIGN.md 2): no cached first state, no key used
twice, no two environments of a batch alike."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import rollax


def _initial_states_of_consecutive_episodes(env, key, num_episodes):
    """With a one-step time limit every step ends an episode, so the ``obs`` returned by each
    same-step autoreset is the first observation of the next episode."""
    params = env.default_params.replace(max_episode_steps=1)
    state, first = env.reset(key, params)
    action = jnp.zeros(env.batch_shape, jnp.int32)

    def body(state, _):
        state, ts = env.step(state, action, params)
        return state, (ts.obs, ts.truncated)

    _, (obs, truncated) = jax.jit(lambda s: jax.lax.scan(body, s, None, num_episodes - 1))(state)
    assert bool(truncated.all())
    return np.concatenate([np.asarray(first.obs)[None], np.asarray(obs)])


def test_a_thousand_consecutive_episodes_start_from_distinct_uniform_states(key):
    env = rollax.make("CartPole-v1")
    starts = _initial_states_of_consecutive_episodes(env, key, 1000)
    assert starts.shape == (1000, 4)
    assert len({row.tobytes() for row in starts}) == 1000
    # Gymnasium's reset range: each component uniform on [-0.05, 0.05].
    for component in range(4):
        result = stats.kstest(starts[:, component], stats.uniform(loc=-0.05, scale=0.1).cdf)
        assert result.pvalue > 1e-3, (component, result)
    # Consecutive episodes are independent: no correlation between one start and the next.
    for component in range(4):
        r, p = stats.pearsonr(starts[:-1, component], starts[1:, component])
        assert p > 1e-3, (component, r)


def test_environments_of_a_batch_never_share_an_initial_state(key):
    env = rollax.make("CartPole-v1", num_envs=512)
    starts = _initial_states_of_consecutive_episodes(env, key, 20)  # (20, 512, 4)
    rows = starts.reshape(-1, 4)
    assert len({row.tobytes() for row in rows}) == rows.shape[0]


@pytest.mark.parametrize("mode", ["same_step", "next_step"])
def test_every_autoreset_mode_is_fresh(mode, key):
    env = rollax.make("MountainCar-v0", num_envs=64, autoreset_mode=mode)
    params = env.default_params.replace(max_episode_steps=3)
    state, ts = env.reset(key, params)
    starts = [np.asarray(ts.obs[:, 0])]
    step = jax.jit(env.step)
    for _ in range(30):
        state, ts = step(state, jnp.ones(64, jnp.int32), params)
        # A new episode's first observation: on the done step itself in same-step mode, on
        # the reset step (episode length 0) in next-step mode.
        new = ts.done if mode == "same_step" else ts.info["episode_length"] == 0
        starts.append(np.asarray(ts.obs[:, 0])[np.asarray(new)])
    starts = np.concatenate(starts)
    assert starts.size >= 64 * 8
    assert len(np.unique(starts)) == starts.size


def test_reset_where_draws_a_new_state_each_time(key):
    env = rollax.make("CartPole-v1", num_envs=3, autoreset_mode="disabled")
    state, ts = env.reset(key)
    mask = np.array([True, True, True])
    seen = {np.asarray(ts.obs).tobytes()}
    for _ in range(50):
        state, ts = env.reset_where(state, mask)
        seen.add(np.asarray(ts.obs).tobytes())
    assert len(seen) == 51


@pytest.mark.parametrize("strategy", ["every_step", "on_done", "compact"])
def test_each_environment_carries_its_own_key_and_resets_advance_it(strategy, key):
    env = rollax.make("CartPole-v1", num_envs=4, reset_strategy=strategy)
    state, _ = env.reset(key)
    keys0 = np.asarray(jax.random.key_data(state.key))
    assert len({k.tobytes() for k in keys0}) == 4
    params = env.default_params.replace(max_episode_steps=1)
    state, _ = env.step(state, jnp.zeros(4, jnp.int32), params)
    keys1 = np.asarray(jax.random.key_data(state.key))
    assert not np.any(np.all(keys0 == keys1, axis=-1))  # every reset split its key
    # No reset, no key consumed: deterministic dynamics pay nothing for keys.
    state2, _ = env.step(state, jnp.zeros(4, jnp.int32))
    np.testing.assert_array_equal(jax.random.key_data(state2.key), keys1)


def test_the_pool_draws_with_its_own_key_chain(key):
    """The pool strategy draws states ahead of time from a key of its own, split at every
    refill; the environments' keys are not consumed."""
    env = rollax.make("CartPole-v1", num_envs=4, reset_strategy="pool", refill_size=4)
    params = env.default_params.replace(max_episode_steps=1)
    state, _ = env.reset(key, params)
    pool_keys = [np.asarray(jax.random.key_data(state.resets.key))]
    for _ in range(3):  # each step hands out 4 of the 8 states: refills every other step
        state, _ = env.step(state, jnp.zeros(4, jnp.int32), params)
        pool_keys.append(np.asarray(jax.random.key_data(state.resets.key)))
    assert len({k.tobytes() for k in pool_keys}) == 2  # one refill in three steps
