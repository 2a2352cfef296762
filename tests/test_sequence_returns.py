"""n-step, λ-return and Retrace targets against plain-Python references, on sequences that
hold several episodes, some terminated and some truncated."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from _references import reference_lambda_returns as _reference_lambda_returns
from _references import reference_nstep as _reference_nstep
from rollax.ops import gae, lambda_returns, nstep_targets, retrace_targets

# --- references: one environment, loops over numpy, written from the definitions ---


def _reference_retrace(
    rewards, q_taken, next_expected_q, log_rhos, terminated, truncated, gamma, lam
):
    """target_t = r_t + gamma (1 - term_t) [E_t + c_{t+1} (target_{t+1} - q_{t+1})]."""
    T = len(rewards)
    gamma = np.broadcast_to(np.asarray(gamma, np.float64), (T,))
    lam = np.broadcast_to(np.asarray(lam, np.float64), (T,))
    targets = [0.0] * T
    for t in reversed(range(T)):
        if terminated[t]:
            targets[t] = float(rewards[t])
            continue
        if truncated[t] or t == T - 1:
            trace = 0.0  # the trace is cut at an episode end and at the end of the sequence
        else:
            trace = float(lam[t]) * min(1.0, math.exp(float(log_rhos[t + 1])))
        correction = trace * (targets[t + 1] - float(q_taken[t + 1])) if trace else 0.0
        targets[t] = float(rewards[t]) + float(gamma[t]) * (float(next_expected_q[t]) + correction)
    return np.array(targets)


def _reference_retrace_sum(
    rewards, q_taken, next_expected_q, log_rhos, terminated, truncated, gamma, lam
):
    """Munos et al.'s form: Q_t + sum_s gamma^(s-t) (c_{t+1} ... c_s) delta_s, forwards."""
    T = len(rewards)
    deltas = [
        rewards[s] + (0.0 if terminated[s] else gamma * next_expected_q[s]) - q_taken[s]
        for s in range(T)
    ]
    targets = []
    for t in range(T):
        total, weight = float(q_taken[t]), 1.0
        for s in range(t, T):
            total += weight * float(deltas[s])
            if terminated[s] or truncated[s]:
                break  # the trace stops at the end of the episode
            if s + 1 < T:
                weight *= gamma * lam * min(1.0, math.exp(float(log_rhos[s + 1])))
        targets.append(total)
    return np.array(targets)


# --- a hand-made sequence: four episodes in ten steps ---
#
#   t:          0  1  2 | 3  4  5 | 6  7 | 8  9
#   episode:    A  A  A | B  B  B | C  C | D  D
#   end:              term      trunc  term  (last step: parametrized)


def _hand_made(last_end):
    T = 10
    rng = np.random.default_rng(7)
    rewards = rng.normal(size=T).astype(np.float32)
    values = rng.normal(size=T).astype(np.float32)
    terminated = np.zeros(T, bool)
    truncated = np.zeros(T, bool)
    terminated[2] = terminated[7] = True
    truncated[5] = True
    terminated[-1] = last_end == "terminated"
    truncated[-1] = last_end == "truncated"
    # The true successor's value: values[t + 1] inside an episode, the final observation's
    # value (far from values[t + 1]) where the episode ended or the sequence stops.
    final_values = (10.0 + rng.normal(size=T)).astype(np.float32)
    following = np.append(values[1:], 0.0).astype(np.float32)
    ended = terminated | truncated
    ended[-1] = True
    next_values = np.where(ended, final_values, following).astype(np.float32)
    assert next_values[5] != values[6]  # the truncation bootstraps from elsewhere
    return rewards, values, next_values, terminated, truncated


def _j(*arrays):
    return [jnp.asarray(a) for a in arrays]


@pytest.mark.parametrize("last_end", ["none", "terminated", "truncated"])
@pytest.mark.parametrize("lam", [0.0, 0.7, 1.0])
def test_lambda_returns_match_the_reference_on_a_hand_made_sequence(last_end, lam):
    rewards, values, next_values, terminated, truncated = _hand_made(last_end)
    out = jax.jit(lambda_returns)(
        *_j(rewards, values, next_values, terminated, truncated), 0.9, lam
    )
    expected = _reference_lambda_returns(rewards, next_values, terminated, truncated, 0.9, lam)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    # Every episode's targets only see that episode: changing the others changes nothing.
    for episode in (slice(0, 3), slice(3, 6), slice(6, 8), slice(8, 10)):
        pieces = (rewards, values, next_values, terminated, truncated)
        alone = lambda_returns(*_j(*(a[episode] for a in pieces)), 0.9, lam)
        np.testing.assert_allclose(out[episode], alone, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("last_end", ["none", "terminated", "truncated"])
@pytest.mark.parametrize("n", [1, 2, 3, 12])
def test_nstep_targets_match_the_reference_on_a_hand_made_sequence(last_end, n):
    rewards, _, next_values, terminated, truncated = _hand_made(last_end)
    out = jax.jit(nstep_targets, static_argnums=5)(
        *_j(rewards, next_values, terminated, truncated), 0.9, n
    )
    expected = _reference_nstep(rewards, next_values, terminated, truncated, 0.9, n)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_nstep_targets_on_numbers_worked_out_by_hand():
    # t0 goes on, t1 is truncated (its final observation is worth 10), t2 terminates, t3
    # starts a new episode and is the last step (its successor is worth 8).
    rewards = jnp.ones(4)
    next_values = jnp.array([4.0, 10.0, 99.0, 8.0])
    terminated = jnp.array([False, False, True, False])
    truncated = jnp.array([False, True, False, False])
    out = nstep_targets(rewards, next_values, terminated, truncated, 0.5, 3)
    # G0 = 1 + .5 + .25 * 10 (stops at the truncation); G1 = 1 + .5 * 10; G2 = 1;
    # G3 = 1 + .5 * 8 (the sequence ends)
    np.testing.assert_allclose(out, [4.0, 6.0, 1.0, 5.0], rtol=1e-6)
    one = nstep_targets(rewards, next_values, terminated, truncated, 0.5, 1)
    np.testing.assert_allclose(one, [3.0, 6.0, 1.0, 5.0], rtol=1e-6)


def test_nstep_targets_refuse_a_bad_n():
    ones, flags = jnp.ones(3), jnp.zeros(3, bool)
    with pytest.raises(ValueError, match="n must be a positive integer"):
        nstep_targets(ones, ones, flags, flags, 0.9, 0)


def test_lambda_returns_on_numbers_worked_out_by_hand():
    # t0 goes on, t1 is truncated (its final observation is worth 10, the next row's 6),
    # t2 terminates, t3 starts a new episode and is the last step (its successor is worth 8).
    rewards = jnp.ones(4)
    values = jnp.array([0.0, 4.0, 6.0, 3.0])
    next_values = jnp.array([4.0, 10.0, 99.0, 8.0])  # 99: a terminated step never bootstraps
    terminated = jnp.array([False, False, True, False])
    truncated = jnp.array([False, True, False, False])
    out = lambda_returns(rewards, values, next_values, terminated, truncated, 0.5, 0.5)
    # G3 = 1 + .5 * 8; G2 = 1; G1 = 1 + .5 * 10; G0 = 1 + .5 * (.5 * 4 + .5 * G1)
    np.testing.assert_allclose(out, [3.5, 6.0, 1.0, 5.0], rtol=1e-6)


def test_retrace_on_numbers_worked_out_by_hand():
    # The same four steps; the target policy is half as likely as the behaviour to take a1.
    rewards = jnp.ones(4)
    q_taken = jnp.array([0.0, 4.0, 6.0, 3.0])
    next_expected_q = jnp.array([5.0, 10.0, 99.0, 8.0])
    log_rhos = jnp.log(jnp.array([1.0, 0.5, 2.0, 1.0]))
    terminated = jnp.array([False, False, True, False])
    truncated = jnp.array([False, True, False, False])
    out = retrace_targets(
        rewards, q_taken, next_expected_q, log_rhos, terminated, truncated, 0.5, 1.0
    )
    # target1 = 1 + .5 * 10 (truncated: no trace); c1 = min(1, .5) = .5;
    # target0 = 1 + .5 * (5 + .5 * (6 - 4))
    np.testing.assert_allclose(out, [4.0, 6.0, 1.0, 5.0], rtol=1e-6)


def _hand_made_retrace(last_end):
    rewards, q_taken, next_expected_q, terminated, truncated = _hand_made(last_end)
    rng = np.random.default_rng(8)
    log_rhos = rng.normal(scale=1.5, size=len(rewards)).astype(np.float32)  # some above 0
    return rewards, q_taken, next_expected_q, log_rhos, terminated, truncated


@pytest.mark.parametrize("last_end", ["none", "terminated", "truncated"])
@pytest.mark.parametrize("lam", [0.0, 0.7, 1.0])
def test_retrace_matches_both_references_on_a_hand_made_sequence(last_end, lam):
    inputs = _hand_made_retrace(last_end)
    out = jax.jit(retrace_targets)(*_j(*inputs), 0.9, lam)
    np.testing.assert_allclose(out, _reference_retrace(*inputs, 0.9, lam), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out, _reference_retrace_sum(*inputs, 0.9, lam), rtol=1e-5, atol=1e-5)


# --- property tests: random flags and values against the references ---


def _random_sequence(T, B, seed, end_rate):
    """(T, B) sequences whose next_values follow values within episodes."""
    rng = np.random.default_rng(seed)
    rewards = rng.normal(size=(T, B)).astype(np.float32)
    values = rng.normal(size=(T, B)).astype(np.float32)
    terminated = rng.random((T, B)) < end_rate
    truncated = rng.random((T, B)) < end_rate  # both at once happens: termination wins
    ended = terminated | truncated
    ended[-1] = True
    following = np.concatenate([values[1:], np.zeros((1, B), np.float32)])
    final_values = rng.normal(loc=3.0, size=(T, B)).astype(np.float32)
    next_values = np.where(ended, final_values, following).astype(np.float32)
    log_rhos = rng.normal(scale=1.5, size=(T, B)).astype(np.float32)
    return rewards, values, next_values, terminated, truncated, log_rhos


_lambda_returns = jax.jit(lambda_returns)
_retrace = jax.jit(retrace_targets)
_gae = jax.jit(gae)

_sizes = dict(
    T=st.sampled_from([1, 2, 3, 5, 8]),
    B=st.sampled_from([1, 3]),
    seed=st.integers(0, 2**16),
    end_rate=st.sampled_from([0.0, 0.2, 0.5, 1.0]),
    gamma=st.floats(0.0, 1.0),
    lam=st.floats(0.0, 1.0),
)


@settings(max_examples=40, deadline=None)
@given(**_sizes)
@example(T=8, B=3, seed=0, end_rate=0.2, gamma=0.99, lam=0.95)
def test_lambda_returns_match_the_reference_and_gae(T, B, seed, end_rate, gamma, lam):
    rewards, values, next_values, terminated, truncated, _ = _random_sequence(T, B, seed, end_rate)
    args = _j(rewards, values, next_values, terminated, truncated)
    out = np.asarray(_lambda_returns(*args, gamma, lam))
    for i in range(B):
        expected = _reference_lambda_returns(
            rewards[:, i], next_values[:, i], terminated[:, i], truncated[:, i], gamma, lam
        )
        np.testing.assert_allclose(out[:, i], expected, rtol=1e-5, atol=1e-4)
    # GAE's value targets are the same λ-returns, written through advantages.
    _, gae_targets = _gae(*args, gamma, lam)
    np.testing.assert_allclose(out, gae_targets, rtol=1e-5, atol=1e-4)


_nstep = jax.jit(nstep_targets, static_argnums=5)


@settings(max_examples=40, deadline=None)
@given(**_sizes, n=st.sampled_from([1, 2, 3, 5, 9]))
@example(T=8, B=3, seed=0, end_rate=0.2, gamma=0.99, lam=0.0, n=3)
def test_nstep_targets_match_the_reference(T, B, seed, end_rate, gamma, lam, n):
    rewards, values, next_values, terminated, truncated, _ = _random_sequence(T, B, seed, end_rate)
    out = np.asarray(_nstep(*_j(rewards, next_values, terminated, truncated), gamma, n))
    for i in range(B):
        expected = _reference_nstep(
            rewards[:, i], next_values[:, i], terminated[:, i], truncated[:, i], gamma, n
        )
        np.testing.assert_allclose(out[:, i], expected, rtol=1e-5, atol=1e-4)
    if n == 1:  # one-step targets are λ-returns at λ = 0
        lam0 = _lambda_returns(*_j(rewards, values, next_values, terminated, truncated), gamma, 0.0)
        np.testing.assert_allclose(out, lam0, rtol=1e-5, atol=1e-5)


@settings(max_examples=40, deadline=None)
@given(**_sizes)
@example(T=8, B=3, seed=0, end_rate=0.2, gamma=0.99, lam=0.95)
def test_retrace_matches_the_references(T, B, seed, end_rate, gamma, lam):
    rewards, q_taken, next_q, terminated, truncated, log_rhos = _random_sequence(
        T, B, seed, end_rate
    )
    out = np.asarray(
        _retrace(*_j(rewards, q_taken, next_q, log_rhos, terminated, truncated), gamma, lam)
    )
    for i in range(B):
        column = [a[:, i] for a in (rewards, q_taken, next_q, log_rhos, terminated, truncated)]
        expected = _reference_retrace(*column, gamma, lam)
        np.testing.assert_allclose(out[:, i], expected, rtol=1e-5, atol=1e-4)
        by_sum = _reference_retrace_sum(*column, gamma, lam)
        np.testing.assert_allclose(out[:, i], by_sum, rtol=1e-5, atol=1e-4)


# --- identities ---


def test_lam_zero_gives_one_step_td_targets():
    rewards, values, next_values, terminated, truncated, log_rhos = _random_sequence(12, 4, 1, 0.3)
    one_step = rewards + 0.9 * (1.0 - terminated) * next_values
    args = _j(rewards, values, next_values, terminated, truncated)
    np.testing.assert_allclose(lambda_returns(*args, 0.9, 0.0), one_step, rtol=1e-6, atol=1e-6)
    # Retrace at lam = 0 is the one-step expected-SARSA target, whatever the ratios.
    retrace = retrace_targets(
        *_j(rewards, values, next_values, log_rhos, terminated, truncated), 0.9, 0.0
    )
    np.testing.assert_allclose(retrace, one_step, rtol=1e-6, atol=1e-6)


def test_lam_one_without_ends_gives_monte_carlo_returns_bootstrapped_at_the_end():
    T, gamma = 9, 0.8
    rng = np.random.default_rng(2)
    rewards = rng.normal(size=T).astype(np.float32)
    values = rng.normal(size=T).astype(np.float32)
    next_values = np.append(values[1:], 4.0).astype(np.float32)
    never = np.zeros(T, bool)
    out = lambda_returns(*_j(rewards, values, next_values, never, never), gamma, 1.0)
    expected = [
        sum(gamma ** (k - t) * rewards[k] for k in range(t, T)) + gamma ** (T - t) * 4.0
        for t in range(T)
    ]
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("lam", [0.0, 0.5, 1.0])
def test_on_policy_retrace_is_the_lambda_return_of_q_when_q_of_the_next_action_is_its_value(lam):
    # pi == mu (log ratios 0) and Q(s_{t+1}, a_{t+1}) == E_pi Q(s_{t+1}, .) inside episodes
    # (a single action, or greedy policies): the traces are lam and the targets the λ-return.
    rewards, q_taken, next_q, terminated, truncated, _ = _random_sequence(16, 3, 3, 0.15)
    zeros = np.zeros_like(rewards)
    retrace = retrace_targets(
        *_j(rewards, q_taken, next_q, zeros, terminated, truncated), 0.95, lam
    )
    lam_return = lambda_returns(*_j(rewards, q_taken, next_q, terminated, truncated), 0.95, lam)
    np.testing.assert_allclose(retrace, lam_return, rtol=1e-5, atol=1e-5)
    # Ratios above 1 are cut at 1, even ones that would overflow, and log_rhos[0] is unused.
    above = np.full_like(rewards, 1e4)
    above[0] = -5.0
    cut = retrace_targets(*_j(rewards, q_taken, next_q, above, terminated, truncated), 0.95, lam)
    np.testing.assert_allclose(cut, lam_return, rtol=1e-5, atol=1e-5)


def test_a_truncation_bootstraps_from_the_final_observation_and_a_termination_does_not():
    # Two steps: the first ends; the second, a new episode, is worth 100 if it leaked back.
    rewards = jnp.array([1.0, 100.0])
    values = jnp.array([0.0, 50.0])
    next_values = jnp.array([10.0, 100.0])  # the first step's final observation is worth 10
    no = jnp.array([False, False])
    first = jnp.array([True, False])
    for lam in (0.0, 0.5, 1.0):
        trunc = lambda_returns(rewards, values, next_values, no, first, 0.9, lam)
        term = lambda_returns(rewards, values, next_values, first, no, 0.9, lam)
        both = lambda_returns(rewards, values, next_values, first, first, 0.9, lam)
        assert float(trunc[0]) == pytest.approx(1 + 0.9 * 10)
        assert float(term[0]) == pytest.approx(1.0)
        assert float(both[0]) == pytest.approx(1.0)  # terminated wins
        log_rhos = jnp.zeros(2)
        trunc = retrace_targets(rewards, values, next_values, log_rhos, no, first, 0.9, lam)
        term = retrace_targets(rewards, values, next_values, log_rhos, first, no, 0.9, lam)
        assert float(trunc[0]) == pytest.approx(1 + 0.9 * 10)
        assert float(term[0]) == pytest.approx(1.0)


# --- transformations, data hyperparameters, dtypes, shapes ---


def test_jit_of_vmap_matches_the_reference_with_a_discount_per_sequence():
    B, T = 5, 11
    rewards, values, next_values, terminated, truncated, log_rhos = (
        np.moveaxis(a, 1, 0) for a in _random_sequence(T, B, 4, 0.25)
    )  # (B, T): vmap over the sequences
    gammas = np.linspace(0.5, 0.99, B).astype(np.float32)
    lams = np.linspace(0.0, 1.0, B).astype(np.float32)
    lr = jax.jit(jax.vmap(lambda_returns))(
        *_j(rewards, values, next_values, terminated, truncated, gammas, lams)
    )
    rt = jax.jit(jax.vmap(retrace_targets))(
        *_j(rewards, values, next_values, log_rhos, terminated, truncated, gammas, lams)
    )
    for b in range(B):
        seq = (rewards[b], next_values[b], terminated[b], truncated[b])
        expected = _reference_lambda_returns(*seq, gammas[b], lams[b])
        np.testing.assert_allclose(lr[b], expected, rtol=1e-5, atol=1e-5)
        seq = (rewards[b], values[b], next_values[b], log_rhos[b], terminated[b], truncated[b])
        expected = _reference_retrace(*seq, gammas[b], lams[b])
        np.testing.assert_allclose(rt[b], expected, rtol=1e-5, atol=1e-5)


def test_gamma_and_lam_are_data_per_step_arrays_included():
    rewards, values, next_values, terminated, truncated, log_rhos = _random_sequence(7, 2, 5, 0.2)
    traces = []

    @jax.jit
    def both(gamma, lam):
        traces.append(None)  # runs once per compilation
        lr = lambda_returns(*_j(rewards, values, next_values, terminated, truncated), gamma, lam)
        rt = retrace_targets(
            *_j(rewards, values, next_values, log_rhos, terminated, truncated), gamma, lam
        )
        return lr, rt

    rng = np.random.default_rng(6)
    for _ in range(3):
        gamma = rng.uniform(0.5, 1.0, size=(7, 2)).astype(np.float32)  # one per step
        lam = rng.uniform(0.0, 1.0, size=(7, 2)).astype(np.float32)
        lr, rt = both(jnp.asarray(gamma), jnp.asarray(lam))
        for i in range(2):
            gam, lm = gamma[:, i], lam[:, i]
            seq = (rewards[:, i], next_values[:, i], terminated[:, i], truncated[:, i])
            np.testing.assert_allclose(
                lr[:, i], _reference_lambda_returns(*seq, gam, lm), rtol=1e-5, atol=1e-5
            )
            seq = tuple(
                a[:, i] for a in (rewards, values, next_values, log_rhos, terminated, truncated)
            )
            np.testing.assert_allclose(
                rt[:, i], _reference_retrace(*seq, gam, lm), rtol=1e-5, atol=1e-5
            )
    assert len(traces) == 1  # new values of gamma and lam did not recompile


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16])
def test_the_dtype_follows_the_values(dtype):
    rewards, values, next_values, terminated, truncated, log_rhos = _random_sequence(6, 2, 9, 0.3)
    values, next_values = jnp.asarray(values, dtype), jnp.asarray(next_values, dtype)
    lr = lambda_returns(*_j(rewards), values, next_values, *_j(terminated, truncated), 0.99, 0.9)
    rt = retrace_targets(
        *_j(rewards), values, next_values, *_j(log_rhos, terminated, truncated), 0.99, 0.9
    )
    assert lr.dtype == dtype and rt.dtype == dtype


def test_inputs_of_different_shapes_are_refused():
    ones, flags = jnp.ones((4, 2)), jnp.zeros((4, 2), bool)
    with pytest.raises(ValueError, match="next_values"):
        lambda_returns(ones, ones, jnp.ones((3, 2)), flags, flags, 0.9, 0.9)
    with pytest.raises(ValueError, match="log_rhos"):
        retrace_targets(ones, ones, ones, jnp.ones(4), flags, flags, 0.9, 0.9)
    with pytest.raises(ValueError, match="time-major"):
        lambda_returns(*(jnp.ones(()),) * 3, *(jnp.zeros((), bool),) * 2, 0.9, 0.9)
