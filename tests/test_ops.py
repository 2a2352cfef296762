"""GAE against a plain-Python reference (termination and truncation), running statistics
against numpy."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rollax.ops import gae, normalize, running_stats, update_running_stats


def _reference_gae(rewards, values, next_values, terminated, truncated, gamma, lam):
    """A direct transcription of the definition, one environment, loops only."""
    T = len(rewards)
    advantages = [0.0] * T
    following = 0.0
    for t in reversed(range(T)):
        bootstrap = 0.0 if terminated[t] else gamma * next_values[t]
        delta = rewards[t] + bootstrap - values[t]
        if terminated[t] or truncated[t]:
            following = 0.0  # nothing flows back across an episode boundary
        following = delta + gamma * lam * following
        advantages[t] = following
    return np.array(advantages), np.array(advantages) + np.array(values)


def test_gae_matches_the_reference_with_terminated_and_truncated_episodes():
    rng = np.random.default_rng(0)
    T, N = 40, 6
    rewards = rng.normal(size=(T, N)).astype(np.float32)
    values = rng.normal(size=(T, N)).astype(np.float32)
    next_values = np.concatenate([values[1:], rng.normal(size=(1, N))]).astype(np.float32)
    terminated = rng.random((T, N)) < 0.08
    truncated = (rng.random((T, N)) < 0.08) & ~terminated
    truncated[5, 0] = True  # at least one of each, and one of each at the last step
    terminated[9, 0] = True
    terminated[-1, 1], truncated[-1, 2] = True, True
    # At an episode end the successor is the final observation, not the next row's.
    final_values = rng.normal(size=(T, N)).astype(np.float32)
    done = terminated | truncated
    next_values = np.where(done, final_values, next_values)
    adv, ret = jax.jit(gae)(
        jnp.asarray(rewards),
        jnp.asarray(values),
        jnp.asarray(next_values),
        jnp.asarray(terminated),
        jnp.asarray(truncated),
        0.99,
        0.95,
    )
    for i in range(N):
        ref_adv, ref_ret = _reference_gae(
            rewards[:, i],
            values[:, i],
            next_values[:, i],
            terminated[:, i],
            truncated[:, i],
            0.99,
            0.95,
        )
        np.testing.assert_allclose(adv[:, i], ref_adv, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(ret[:, i], ref_ret, rtol=1e-5, atol=1e-5)


def test_truncation_bootstraps_from_the_final_observation_and_termination_does_not():
    # One step, reward 1, value of the state 0, value of the successor 10.
    ones = jnp.ones((1,))
    kwargs = dict(rewards=ones, values=0 * ones, next_values=10 * ones, gamma=0.9, lam=0.95)
    adv_trunc, _ = gae(terminated=jnp.array([False]), truncated=jnp.array([True]), **kwargs)
    adv_term, _ = gae(terminated=jnp.array([True]), truncated=jnp.array([False]), **kwargs)
    adv_both, _ = gae(terminated=jnp.array([True]), truncated=jnp.array([True]), **kwargs)
    assert float(adv_trunc[0]) == pytest.approx(1 + 0.9 * 10)
    assert float(adv_term[0]) == pytest.approx(1.0)
    assert float(adv_both[0]) == pytest.approx(1.0)  # terminated wins


def test_lambda_one_gives_discounted_returns_within_episodes():
    rewards = jnp.array([1.0, 1.0, 1.0, 1.0])
    values = jnp.zeros(4)
    terminated = jnp.array([False, True, False, False])
    truncated = jnp.array([False, False, False, True])
    next_values = jnp.array([0.0, 0.0, 0.0, 5.0])
    _, returns = gae(rewards, values, next_values, terminated, truncated, 0.5, 1.0)
    np.testing.assert_allclose(returns, [1.5, 1.0, 1 + 0.5 * (1 + 0.5 * 5), 1 + 0.5 * 5])


def test_running_stats_match_numpy_over_many_batches():
    rng = np.random.default_rng(1)
    stats = running_stats((3,))
    batches = [rng.normal(loc=[1, -2, 5], scale=[1, 3, 0.1], size=(n, 3)) for n in (7, 50, 1)]
    update = jax.jit(update_running_stats)
    for batch in batches:
        stats = update(stats, jnp.asarray(batch, jnp.float32))
    everything = np.concatenate(batches)
    np.testing.assert_allclose(stats.mean, everything.mean(0), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(stats.var, everything.var(0), rtol=1e-3, atol=1e-4)
    assert float(stats.count) == pytest.approx(len(everything), abs=1e-3)
    z = normalize(stats, jnp.asarray(everything, jnp.float32))
    np.testing.assert_allclose(z.mean(0), 0.0, atol=1e-3)
    np.testing.assert_allclose(z.std(0), 1.0, atol=1e-2)
    # Leading axes of any number: (T, N, 3) updates like (T * N, 3).
    stacked = update_running_stats(running_stats((3,)), jnp.ones((4, 5, 3)))
    assert float(stacked.count) == pytest.approx(20, abs=1e-3)
    assert float(normalize(stacked, jnp.full((3,), 1e6)).max()) == 10.0  # clipped


def _reference_nstep_target(rewards, terminated, truncated, next_values, gamma, n, t):
    """The n-step target of the window starting at t, written as a plain loop."""
    target, discount = 0.0, 1.0
    for k in range(t, t + n):
        target += discount * rewards[k]
        discount *= gamma
        if terminated[k]:
            return target  # the episode is over: nothing to bootstrap
        if truncated[k]:
            return target + discount * next_values[k]  # the true final observation's value
    return target + discount * next_values[t + n - 1]


@pytest.mark.parametrize("n", [1, 3, 5])
def test_nstep_return_matches_the_reference_with_terminated_and_truncated_steps(n):
    from rollax.ops import nstep_return

    rng = np.random.default_rng(n)
    steps = 200
    rewards = rng.normal(size=steps).astype(np.float32)
    ends = rng.random(steps) < 0.25
    terminated = ends & (rng.random(steps) < 0.5)
    truncated = ends & ~terminated
    next_values = rng.normal(size=steps).astype(np.float32)  # V of each step's true successor
    starts = np.arange(steps - n + 1)
    window = starts[:, None] + np.arange(n)[None, :]
    out = jax.jit(nstep_return, static_argnums=())(
        jnp.asarray(rewards[window]),
        jnp.asarray(terminated[window]),
        jnp.asarray(truncated[window]),
        0.9,
    )
    targets = (
        np.asarray(out.reward)
        + np.asarray(out.discount) * next_values[starts + np.asarray(out.index)]
    )
    expected = [
        _reference_nstep_target(rewards, terminated, truncated, next_values, 0.9, n, t)
        for t in starts
    ]
    np.testing.assert_allclose(targets, expected, rtol=1e-5, atol=1e-5)
    assert terminated[window].any() and truncated[window].any()  # both kinds of end occur
    if n == 1:  # the one-step target: r + gamma * (1 - terminated) * V(s')
        np.testing.assert_allclose(out.discount, 0.9 * (1.0 - terminated), rtol=1e-6)
