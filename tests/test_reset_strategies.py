"""Reset strategies (DESIGN.md 2): every fresh strategy draws from the same initial-state
distribution as the reference ``every_step``, never repeats a state, and stays correct when
many environments finish at once; ``cached`` is the only one that repeats initial states."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import rollax
from rollax.envs import RESET_STRATEGIES

FRESH = [s for s in RESET_STRATEGIES if s != "cached"]


def _episode_starts(env, num_steps, params=None, seed=0):
    """First observations of every episode begun during a random-action rollout, and the
    states they came with: ``(obs[num_starts, ...], cores)`` including the initial reset."""
    state, ts = env.reset(jax.random.key(seed), params)
    actions = jax.vmap(env.sample_actions)(jax.random.split(jax.random.key(seed + 1), num_steps))

    def body(state, action):
        state, ts = env.step(state, action, params)
        return state, (ts.obs, ts.done, state.core)

    _, (obs, done, cores) = jax.jit(lambda s, a: jax.lax.scan(body, s, a))(state, actions)
    done = np.asarray(done)
    starts = np.concatenate([np.asarray(ts.obs)[None], np.asarray(obs)])
    mask = np.concatenate([np.ones((1, done.shape[1]), bool), done])
    core0 = jax.tree.map(lambda x: np.asarray(x)[None], state.core)
    cores = jax.tree.map(lambda a, b: np.concatenate([a, np.asarray(b)]), core0, cores)
    return starts[mask], jax.tree.map(lambda x: x[mask], cores), mask


# ------------------------------------------------------------------ same distribution


@pytest.mark.parametrize("strategy", FRESH)
def test_cartpole_initial_states_have_the_reference_distribution(strategy):
    def starts_of(strategy):
        env = rollax.make("CartPole-v1", num_envs=64, reset_strategy=strategy)
        params = env.default_params.replace(max_episode_steps=3)
        obs, _, _ = _episode_starts(env, 60, params, seed=11 if strategy == "every_step" else 5)
        return obs

    reference, ours = starts_of("every_step"), starts_of(strategy)
    assert ours.shape[0] >= 64 * 20
    for component in range(4):
        result = stats.ks_2samp(ours[:, component], reference[:, component])
        assert result.pvalue > 1e-3, (strategy, component, result)
    assert np.all(np.abs(ours) <= 0.05)


def _layout_features(env, cores):
    """Agent-goal distance in cells, number of open passages, goal cell index."""
    maze = env.env
    border = maze.view_size // 2
    distance = np.abs(cores.agent - cores.goal).sum(-1) // 2
    layouts = np.stack(
        [
            np.asarray(maze.layout(jax.tree.map(lambda x, i=i: x[i], cores)))
            for i in range(len(distance))
        ]
    )
    passages = (layouts == 0).sum((1, 2)) - maze.size**2
    goal = (cores.goal[:, 0] - border) // 2 * maze.size + (cores.goal[:, 1] - border) // 2
    return {"distance": distance, "passages": passages, "goal": goal}, layouts


def _chi2_same(a, b):
    values = np.union1d(a, b)
    table = np.stack([[np.sum(a == v) for v in values], [np.sum(b == v) for v in values]])
    table = table[:, table.sum(0) >= 5]  # chi-square needs populated cells
    return stats.chi2_contingency(table).pvalue


@functools.cache
def _maze_starts(strategy, seed):
    """Features and layouts of the mazes that 32 environments start over 40 steps."""
    env = rollax.make("Maze-v0", num_envs=32, reset_strategy=strategy)
    params = env.default_params.replace(max_episode_steps=4)
    _, cores, _ = _episode_starts(env, 40, params, seed=seed)
    return _layout_features(env, jax.tree.map(np.asarray, cores))


@pytest.mark.parametrize("strategy", FRESH)
def test_maze_layouts_have_the_reference_distribution_and_never_repeat(strategy):
    # The reference (every_step, key 21) is drawn once per process for all strategies.
    (ref, _), (ours, layouts) = _maze_starts("every_step", 21), _maze_starts(strategy, 3)
    assert layouts.shape[0] >= 32 * 10
    for name in ("distance", "passages", "goal"):
        assert _chi2_same(ours[name], ref[name]) > 1e-3, (strategy, name)
    assert ours["distance"].min() >= 4  # min_goal_distance
    # 6x6 mazes: ~1e13 spanning trees before walls are knocked out, so among a few hundred
    # layouts the distribution itself predicts no repeat at all.
    assert len({layout.tobytes() for layout in layouts}) == layouts.shape[0]


@pytest.mark.parametrize("strategy", FRESH)
def test_tiny_mazes_repeat_exactly_at_the_predicted_rate(strategy):
    """A 2x2 maze without knocked-out walls has exactly 4 layouts (the 4-cycle of cells
    minus one passage), each with probability 1/4: repeats happen, at that rate."""
    env = rollax.make("Maze-v0", num_envs=16, reset_strategy=strategy, size=2)
    params = env.default_params.replace(
        max_episode_steps=1, wall_removal_prob=0.0, min_goal_distance=1
    )
    _, cores, _ = _episode_starts(env, 50, params)
    _, layouts = _layout_features(env, jax.tree.map(np.asarray, cores))
    _, counts = np.unique(layouts.reshape(len(layouts), -1), axis=0, return_counts=True)
    assert len(counts) == 4
    assert stats.chisquare(counts).pvalue > 1e-3


# ------------------------------------------------------------------ cached vs fresh


@pytest.mark.parametrize("strategy", RESET_STRATEGIES)
def test_only_cached_repeats_initial_states(strategy):
    env = rollax.make("CartPole-v1", num_envs=8, reset_strategy=strategy)
    params = env.default_params.replace(max_episode_steps=2)
    obs, _, _ = _episode_starts(env, 40, params)
    distinct = len({row.tobytes() for row in obs})
    if strategy == "cached":
        # Brax's behaviour, kept by request only: every environment restarts from its own
        # first state, so 8 distinct states cover all episodes.
        assert distinct == 8 and obs.shape[0] > 8 * 10
    else:
        assert distinct == obs.shape[0]


# ------------------------------------------------------------------ many at once


@pytest.mark.parametrize("block_size", [1, 3, 16])
def test_compact_resets_everyone_when_more_finish_than_the_block(block_size, key):
    n = 16
    env = rollax.make("CartPole-v1", num_envs=n, reset_strategy="compact", block_size=block_size)
    params = env.default_params.replace(max_episode_steps=1)  # all 16 finish every step
    state, ts = env.reset(key, params)
    seen = {row.tobytes() for row in np.asarray(ts.obs)}
    step = jax.jit(env.step)
    for _ in range(5):
        state, ts = step(state, jnp.zeros(n, jnp.int32), params)
        assert bool(ts.truncated.all())
        np.testing.assert_array_equal(state.episode_length, 0)
        new = np.asarray(ts.obs)
        assert np.all(np.abs(new) <= 0.05)  # a first state, not a stepped one
        rows = {row.tobytes() for row in new}
        assert len(rows) == n and not rows & seen  # all fresh, none stale
        seen |= rows


def test_pool_hands_each_state_out_once_across_refills(key):
    n = 8
    env = rollax.make("CartPole-v1", num_envs=n, reset_strategy="pool", refill_size=n)
    params = env.default_params.replace(max_episode_steps=1)
    obs, _, _ = _episode_starts(env, 50, params)  # 50 refills of the 16-state pool
    assert obs.shape[0] == n * 51
    assert len({row.tobytes() for row in obs}) == obs.shape[0]


# Episodes of one step: every environment takes a pooled state each step. The pool holds 128
# (refills of 64); after 9 narrow steps its read position (72) is past the middle.
@pytest.mark.parametrize("narrow_steps", [1, 9])
def test_pool_is_emptied_when_params_change(narrow_steps, key):
    """A curriculum step must not be served states drawn with the old params."""
    n = 8
    env = rollax.make("CartPole-v1", num_envs=n, reset_strategy="pool")
    narrow = env.default_params.replace(max_episode_steps=1, reset_bound=0.001)
    wide = narrow.replace(reset_bound=0.5)
    step = jax.jit(env.step)
    state, _ = env.reset(key, narrow)
    for _ in range(narrow_steps):
        state, ts = step(state, jnp.zeros(n, jnp.int32), narrow)
        assert np.abs(np.asarray(ts.obs)).max() <= 0.001
    for _ in range(20):  # new params from the first step on, across the pool's wrap-around
        state, ts = step(state, jnp.zeros(n, jnp.int32), wide)
        assert (np.abs(np.asarray(ts.obs)).max(axis=1) > 0.001).all()
    assert step._cache_size() == 1


def test_pool_rejects_per_environment_params(key):
    env = rollax.make("CartPole-v1", num_envs=4, reset_strategy="pool")
    params = env.default_params.replace(reset_bound=np.full(4, 0.1, np.float32))
    with pytest.raises(
        ValueError,
        match=r"params.reset_bound \(read by reset_env or observe\) has one value per env",
    ):
        env.reset(key, params)


def test_per_environment_params_shape_the_resets_of_each_environment(key):
    for strategy in ("every_step", "on_done", "compact"):
        env = rollax.make("CartPole-v1", num_envs=4, reset_strategy=strategy)
        bounds = np.array([0.001, 0.01, 0.1, 0.2], np.float32)
        params = env.default_params.replace(max_episode_steps=1, reset_bound=bounds)
        obs, _, mask = _episode_starts(env, 30, params)
        env_index = np.nonzero(mask)[1]
        for i, bound in enumerate(bounds):
            mine = np.abs(obs[env_index == i])
            assert mine.max() <= bound and mine.max() > bound / 2, (strategy, i)


def test_chunked_resets_draw_the_same_states_as_one_batch(key):
    # An environment with a reset_chunk (Craftax on the CPU) is reset a chunk at a time;
    # the states are those of one batched reset, with shared or per-environment params, bit
    # for bit. Both draws are compiled: run op by op, the batch rounds uniform's
    # `u * (max - min) + min` twice where jaxlib 0.12's compiled programs (either one)
    # round it once, 1.5e-8 apart with per-environment bounds (jaxlib 0.10: no difference).
    from rollax.envs._resets import Starts

    class Chunked(type(rollax.make("CartPole-v1").env)):
        reset_chunk = 3

    whole, chunked = rollax.make("CartPole-v1").env, Chunked()
    keys = jax.random.split(key, 8)
    shared = whole.default_params
    per_env = shared.replace(reset_bound=np.linspace(0.01, 0.2, 8, dtype=np.float32))
    axes = jax.tree.map(lambda p: 0 if np.ndim(p) else None, per_env)
    for params, ax in ((shared, None), (per_env, axes)):
        expected = jax.jit(lambda k, p, ax=ax: Starts(whole, p, ax).draw(k))(keys, params)
        got = jax.jit(lambda k, p, ax=ax: Starts(chunked, p, ax).draw(k))(keys, params)
        jax.tree.map(np.testing.assert_array_equal, jax.random.key_data(got[0]),
                     jax.random.key_data(expected[0]))  # fmt: skip
        jax.tree.map(np.testing.assert_array_equal, got[1:], expected[1:])
    assert not np.allclose(got[2], Starts(whole, shared, None).draw(keys)[2])


# ------------------------------------------------------------------ jit, vmap, recompiles


@pytest.mark.parametrize("strategy", RESET_STRATEGIES)
def test_strategies_under_jit_and_vmap_without_recompiling(strategy, key):
    env = rollax.make("CartPole-v1", num_envs=4, reset_strategy=strategy)
    seeds = jax.random.split(key, 3)
    reset = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))
    step = jax.jit(jax.vmap(env.step, in_axes=(0, 0, None)))
    params = env.default_params.replace(max_episode_steps=5)
    state, ts = reset(seeds, params)
    actions = jnp.zeros((3, 4), jnp.int32)
    for limit in (5, 6, 7):
        state, ts = step(state, actions, params.replace(max_episode_steps=limit))
    assert ts.obs.shape == (3, 4, 4)
    assert step._cache_size() == 1 and reset._cache_size() == 1


def test_unknown_strategy_and_options():
    with pytest.raises(ValueError, match=r"reset_strategy must be one of .*'pool'.*got 'lazy'"):
        rollax.make("CartPole-v1", num_envs=2, reset_strategy="lazy")
    with pytest.raises(ValueError, match=r"block_size applies to reset_strategy='compact' only"):
        rollax.make("CartPole-v1", num_envs=2, reset_strategy="on_done", block_size=4)
    with pytest.raises(ValueError, match=r"refill_size must be an integer >= num_envs \(8\)"):
        rollax.make("CartPole-v1", num_envs=8, reset_strategy="pool", refill_size=4)
    with pytest.raises(ValueError, match="block_size must be a positive integer, got 0"):
        rollax.make("CartPole-v1", num_envs=8, reset_strategy="compact", block_size=0)


def test_defaults():
    assert rollax.make("CartPole-v1", num_envs=16).reset_strategy == "pool"
    assert rollax.make("CartPole-v1", num_envs=8).reset_strategy == "on_done"
    assert rollax.make("CartPole-v1").reset_strategy == "on_done"


def test_default_strategy_depends_on_backend_batch_and_reset_cost():
    from rollax.envs._resets import default_reset_strategy

    # CPU: batched refills from 16 environments, a reset when needed below.
    assert default_reset_strategy(None, backend="cpu") == "on_done"
    assert default_reset_strategy(8, backend="cpu") == "on_done"
    assert default_reset_strategy(256, backend="cpu") == "pool"
    # Accelerators: no branch per step, except for resets worth batching.
    assert default_reset_strategy(256, backend="gpu") == "every_step"
    assert default_reset_strategy(4096, costly_reset=True, backend="gpu") == "pool"
    assert default_reset_strategy(4, costly_reset=True, backend="tpu") == "every_step"
    assert rollax.make("Maze-v0").env.costly_reset
    assert not rollax.make("CartPole-v1").env.costly_reset
    assert rollax.make("CartPole-v1", num_envs=256).reset_strategy == default_reset_strategy(256)


@pytest.mark.parametrize("n", [1, 7, 32, 33, 256, 1000, 4096])
def test_the_pools_bit_count_ranks_finished_environments_as_cumsum(n):
    from rollax.envs._resets import inclusive_count

    for i, p in enumerate([0.0, 0.05, 0.5, 1.0]):
        mask = jax.random.bernoulli(jax.random.key(i), p, (n,))
        counts = inclusive_count(mask)
        assert counts.dtype == jnp.int32
        np.testing.assert_array_equal(counts, np.cumsum(np.asarray(mask)))
