"""The contracts of ``VecEnv``: shapes under jit/vmap, the three autoreset modes, true final
observations, exact transition counts, and parameters as data."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import rollax

# PixelMaze-v0 is Maze-v0 observed as pixels: test_maze compares the two step by step.
ENV_IDS = [env_id for env_id in rollax.registered_envs() if env_id != "PixelMaze-v0"]


def _actions(env, key, num_steps):
    """Random actions with a leading time axis: ``(num_steps, *batch, *action)``."""
    return jax.vmap(env.sample_actions)(jax.random.split(key, num_steps))


def _rollout(step, state, actions):
    """Final state and stacked ``(state_before, timestep)`` of a jitted scan of ``step``."""

    def body(state, action):
        next_state, ts = step(state, action)
        return next_state, (state, ts)

    return jax.jit(lambda s, a: jax.lax.scan(body, s, a))(state, actions)


def _np(x):
    """numpy view of an array, typed keys included."""
    if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
        x = jax.random.key_data(x)
    return np.asarray(x)


def _short_params(env, max_episode_steps=25):
    return env.default_params.replace(max_episode_steps=max_episode_steps)


def _assert_tree_close(a, b, rtol, atol):
    """``assert_allclose`` leaf by leaf (observations may be dicts of arrays). Pixels (uint8)
    drawn from positions that differ in their last bit may differ by one level at an edge:
    at most 1, and in no more than one pixel value in 10,000 (1 of 2.2M seen)."""
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        x, y = np.asarray(x), np.asarray(y)
        if x.dtype == np.uint8:
            off = np.abs(x.astype(np.int16) - y.astype(np.int16))
            assert off.max() <= 1 and (off > 0).mean() <= 1e-4, (off.max(), (off > 0).sum())
        else:
            np.testing.assert_allclose(x, y, rtol=rtol, atol=atol)


# --------------------------------------------------------------------- shapes, jit, vmap


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_single_env_shapes_under_jit_vmap(env_id, key):
    env = rollax.make(env_id)
    keys = jax.random.split(key, 3)
    state, ts = jax.jit(jax.vmap(env.reset))(keys)
    actions = jax.vmap(env.action_space.sample)(keys)
    state, ts = jax.jit(jax.vmap(env.step))(state, actions)
    # Observations (arrays or dicts of them) match the space: shapes, dtypes, structure.
    spec = jax.eval_shape(lambda k: env.observation_space.sample(k, (3,)), key)
    for obs in (ts.obs, ts.final_obs):
        assert jax.tree.structure(obs) == jax.tree.structure(spec)
        for x, s in zip(jax.tree.leaves(obs), jax.tree.leaves(spec), strict=True):
            assert x.shape == s.shape and x.dtype == s.dtype
    assert ts.reward.shape == (3,) and ts.reward.dtype == jnp.float32
    assert ts.terminated.dtype == jnp.bool_ and ts.truncated.dtype == jnp.bool_
    assert ts.info["episode_length"].dtype == jnp.int32
    assert ts.info["episode_return"].dtype == jnp.float32
    np.testing.assert_array_equal(ts.info["episode_length"], 1)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_batched_env_equals_vmapped_single_envs(env_id, key):
    """A batch of N is N independent single environments, autoresets included: from the
    same per-environment states (keys included), both give the same transitions."""
    n = 5
    batched = rollax.make(env_id, num_envs=n, reset_strategy="compact", block_size=2)
    single = rollax.make(env_id)
    params = _short_params(batched)
    state_b, _ = batched.reset(key, params)
    state_s = state_b  # the same per-environment states, seen as n single environments
    actions = _actions(batched, jax.random.key(1), 100)
    _, (_, ts_b) = _rollout(lambda s, a: batched.step(s, a, params), state_b, actions)
    vstep = jax.vmap(single.step, in_axes=(0, 0, None))
    _, (_, ts_s) = _rollout(lambda s, a: vstep(s, a, params), state_s, actions)
    assert ts_b.done.any()
    for field in ("obs", "final_obs", "reward"):
        # float32 physics over 100 steps (Pendulum's near zero differs by about 1e-6 between
        # the two programs); a wrong reset or action would differ by about 1.
        _assert_tree_close(getattr(ts_b, field), getattr(ts_s, field), 1e-5, 1e-5)
    np.testing.assert_array_equal(ts_b.terminated, ts_s.terminated)
    np.testing.assert_array_equal(ts_b.truncated, ts_s.truncated)


@pytest.mark.parametrize("mode", ["same_step", "next_step", "disabled"])
def test_no_recompilation_when_params_change(mode, key):
    env = rollax.make("CartPole-v1", num_envs=8, autoreset_mode=mode)
    step = jax.jit(env.step)
    state, _ = env.reset(key)
    action = jnp.zeros(8, jnp.int32)
    params = env.default_params
    for gravity, limit in [(9.8, 500), (12.0, 20), (3.0, 7)]:
        params = params.replace(gravity=gravity, max_episode_steps=limit)
        state, _ = step(state, action, params)
    # One value per environment is data too, and compiles once more for the new shapes only.
    per_env = params.replace(gravity=np.linspace(5.0, 15.0, 8, dtype=np.float32))
    # (Gravity is read by the dynamics only, so even the pool accepts one per environment.)
    state, _ = step(state, action, per_env)
    state, _ = step(state, action, per_env.replace(gravity=np.full(8, 9.8, np.float32)))
    assert step._cache_size() == 2


def test_per_environment_params(key):
    """A params leaf with a leading num_envs axis gives each environment its own value."""
    n = 4
    env = rollax.make("CartPole-v1", num_envs=n, autoreset_mode="disabled")
    gravities = np.array([1.0, 5.0, 9.8, 20.0], np.float32)
    params = env.default_params.replace(gravity=gravities)
    state, _ = env.reset(key, params)
    actions = jnp.zeros((50, n), jnp.int32)
    _, (_, ts) = _rollout(lambda s, a: env.step(s, a, params), state, actions)
    single = rollax.make("CartPole-v1", autoreset_mode="disabled")
    for i, g in enumerate(gravities):
        p = single.default_params.replace(gravity=g)
        s_i = jax.tree.map(lambda x, i=i: x[i], state.replace(resets=None))
        _, (_, ts_i) = _rollout(lambda s, a, p=p: single.step(s, a, p), s_i, actions[:, i])
        # Two compiled programs, 50 steps: last-bit differences grow (1.2e-5 at a value of
        # 4.2, 2.9e-6 relative, with XLA:CPU's older fusion emitters).
        np.testing.assert_allclose(ts.obs[:, i], ts_i.obs, rtol=1e-5, atol=1e-5)
    # Different gravity, different pole trajectories.
    assert len({float(ts.obs[-1, i, 2]) for i in range(n)}) == n


# --------------------------------------------------------------------- same-step autoreset


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_final_obs_is_what_a_non_resetting_copy_reaches(env_id, key):
    """At every step, ``final_obs``, reward and flags are exactly what the same state and
    action give in an environment that never resets; and N calls of step on B environments
    are exactly N x B transitions: the lengths of the finished episodes plus the running ones
    add up to it."""
    env = rollax.make(env_id, num_envs=6)
    reference = rollax.make(env_id, num_envs=6, autoreset_mode="disabled")
    params = _short_params(env)
    state, _ = env.reset(key, params)
    actions = _actions(env, jax.random.key(3), 120)
    final_state, (states_before, ts) = _rollout(lambda s, a: env.step(s, a, params), state, actions)
    ref_step = jax.vmap(lambda s, a: reference.step(s, a, params))
    _, ref = ref_step(states_before, actions)
    assert ts.done.sum() >= 6
    # Two compiled programs may round differently in the last bit (XLA fuses differently).
    _assert_tree_close(ts.final_obs, ref.obs, 1e-5, 1e-6)
    np.testing.assert_allclose(ts.reward, ref.reward, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(ts.terminated, ref.terminated)
    np.testing.assert_array_equal(ts.truncated, ref.truncated)
    # Where the episode goes on, final_obs is obs; where it ended, obs is a new first one.
    done = np.asarray(ts.done)
    differs = np.zeros(done.shape, bool)
    for obs, final in zip(jax.tree.leaves(ts.obs), jax.tree.leaves(ts.final_obs), strict=True):
        obs, final = np.asarray(obs), np.asarray(final)
        np.testing.assert_array_equal(obs[~done], final[~done])
        differs |= (obs != final).reshape(*done.shape, -1).any(-1)
    np.testing.assert_array_equal(differs, done)
    # Every step is a real transition (the same rollout, one compile).
    finished = np.asarray(ts.info["episode_length"])[done].sum()
    running = np.asarray(final_state.episode_length).sum()
    assert finished + running == 120 * 6


def test_same_step_reset_starts_a_fresh_episode(key):
    env = rollax.make("CartPole-v1", num_envs=16)
    params = _short_params(env, 10)
    state, _ = env.reset(key, params)
    actions = _actions(env, jax.random.key(4), 200)
    final_state, (states_before, ts) = _rollout(lambda s, a: env.step(s, a, params), state, actions)
    done = np.asarray(ts.done)
    new_obs = np.asarray(ts.obs)[done]
    assert np.all(np.abs(new_obs) <= 0.05)  # inside CartPole's reset range
    # The state after a done step is at the start of an episode: counters are zero.
    lengths_after = np.asarray(
        jnp.concatenate([states_before.episode_length[1:], final_state.episode_length[None]])
    )
    np.testing.assert_array_equal(lengths_after[done], 0)
    # Episode statistics at the end of an episode are its totals.
    ep_len = np.asarray(ts.info["episode_length"])[done]
    ep_ret = np.asarray(ts.info["episode_return"])[done]
    np.testing.assert_array_equal(ep_ret, ep_len.astype(np.float32))  # CartPole pays 1 a step
    assert ep_len.max() == 10 and ep_len.min() >= 1


# --------------------------------------------------------------------- next-step autoreset


def test_next_step_mode_has_a_reset_step_that_ignores_the_action(key):
    n = 8
    env = rollax.make("CartPole-v1", num_envs=n, autoreset_mode="next_step")
    params = _short_params(env, 12)
    state, _ = env.reset(key, params)
    actions = _actions(env, jax.random.key(6), 100)
    final_state, (states_before, ts) = _rollout(lambda s, a: env.step(s, a, params), state, actions)
    done = np.asarray(ts.done)
    reset_step = np.zeros_like(done)
    reset_step[1:] = done[:-1]
    assert reset_step.sum() >= n
    # The step that ends an episode shows the terminal observation itself.
    np.testing.assert_array_equal(np.asarray(ts.obs)[done], np.asarray(ts.final_obs)[done])
    # The following step is a reset: reward 0, flags false, a first observation.
    assert np.all(np.asarray(ts.reward)[reset_step] == 0.0)
    assert not np.asarray(ts.done)[reset_step].any()
    assert np.all(np.abs(np.asarray(ts.obs)[reset_step]) <= 0.05)
    np.testing.assert_array_equal(np.asarray(ts.info["episode_length"])[reset_step], 0)
    # Its action is ignored: the opposite action gives the same outcome.
    t, i = np.argwhere(reset_step)[0]
    before = jax.tree.map(lambda x: x[t], states_before)
    flipped = actions[t].at[i].set(1 - actions[t, i])
    _, ts_a = env.step(before, actions[t], params)
    _, ts_b = env.step(before, flipped, params)
    np.testing.assert_array_equal(ts_a.obs[i], ts_b.obs[i])
    # Real transitions are the steps minus the reset steps.
    # (An episode that ended on the last step is finished, its reset still pending.)
    finished = np.asarray(ts.info["episode_length"])[done].sum()
    pending = np.asarray(final_state.needs_reset)
    np.testing.assert_array_equal(pending, done[-1])
    running = np.asarray(final_state.episode_length)[~pending].sum()
    assert finished + running == done.size - reset_step.sum()


# --------------------------------------------------------------------- disabled autoreset


def test_disabled_mode_never_resets_and_reset_where_resets_only_the_mask(key):
    n = 6
    env = rollax.make("CartPole-v1", num_envs=n, autoreset_mode="disabled")
    params = _short_params(env, 5)
    state, ts0 = env.reset(key, params)
    actions = jnp.zeros((8, n), jnp.int32)
    state, (_, ts) = _rollout(lambda s, a: env.step(s, a, params), state, actions)
    # Past the limit the episode keeps going (and stays truncated) until the user resets.
    np.testing.assert_array_equal(ts.info["episode_length"][-1], 8)
    assert np.all(np.asarray(ts.truncated)[4:])
    np.testing.assert_array_equal(ts.obs, ts.final_obs)

    mask = np.array([True, False, True, False, False, True])
    new_state, reset_ts = jax.jit(env.reset_where)(state, mask, params)
    obs_before = np.asarray(ts.obs[-1])
    obs_after = np.asarray(reset_ts.obs)
    np.testing.assert_array_equal(obs_after[~mask], obs_before[~mask])
    kept = jax.tree.map(
        lambda a, b: np.all(_np(a)[~mask] == _np(b)[~mask]),
        new_state.replace(resets=None),
        state.replace(resets=None),
    )
    assert all(jax.tree.leaves(kept))  # core, key and counters untouched where not masked
    assert np.all(np.abs(obs_after[mask]) <= 0.05)
    np.testing.assert_array_equal(new_state.episode_length, np.where(mask, 0, 8))
    # Each masked environment gets a state of its own, not the one it started with.
    assert not np.any(np.all(obs_after[mask] == np.asarray(ts0.obs)[mask], axis=-1))
    assert len({tuple(row) for row in obs_after[mask]}) == mask.sum()


def test_single_env_step_and_reset_where(key):
    env = rollax.make("Pendulum-v1")
    state, ts = env.reset(key)
    assert ts.obs.shape == (3,)
    state, ts = env.step(state, jnp.array([0.5], jnp.float32))
    assert ts.reward.shape == () and int(ts.info["episode_length"]) == 1
    state, ts = env.reset_where(state, jnp.array(True))
    assert int(state.episode_length) == 0
