"""n-step, λ-return and Retrace targets over sequences that may hold several episodes.

Both keep termination (no bootstrap) apart from truncation (a bootstrap from the value of the
true final observation), and neither lets anything flow across an episode boundary inside a
sequence, as :func:`rollax.ops.gae` does.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from rollax.ops._nstep import nstep_return

__all__ = ["lambda_returns", "nstep_targets", "retrace_targets"]


def _check_shapes(**arrays: jax.Array) -> tuple[int, ...]:
    """The common shape of time-major per-step inputs; a ValueError if they differ."""
    shapes = {name: tuple(jnp.shape(a)) for name, a in arrays.items()}
    first = next(iter(shapes.values()))
    if len(first) < 1 or any(shape != first for shape in shapes.values()):
        described = ", ".join(f"{name} {shape}" for name, shape in shapes.items())
        raise ValueError(f"per-step inputs must share one time-major shape (T, ...): {described}")
    return first


def _per_step(x: float | jax.Array, shape: tuple[int, ...], dtype: jnp.dtype) -> jax.Array:
    """``gamma`` or ``lam`` (a float, a scalar or an array broadcastable to ``shape``)."""
    return jnp.broadcast_to(jnp.asarray(x, dtype), shape)


def _cut_last(x: jax.Array) -> jax.Array:
    """``x`` with its last step set to zero (nothing follows the end of the sequence)."""
    return x.at[-1].set(0) if x.shape[0] else x


def lambda_returns(
    rewards: jax.Array,
    values: jax.Array,
    next_values: jax.Array,
    terminated: jax.Array,
    truncated: jax.Array,
    gamma: float | jax.Array,
    lam: float | jax.Array,
) -> jax.Array:
    """TD(λ) value targets of a time-major sequence that may hold several episodes.

    Backwards over the steps ``t`` of the sequence::

        G_t = r_t + gamma_t * (1 - terminated_t)
                    * [(1 - l_t) * next_values_t + l_t * G_{t+1}],
        l_t = lam_t * (1 - done_t),   done = terminated | truncated,   l_{T-1} = 0

    so a terminated transition does not bootstrap, a truncated one bootstraps from
    ``next_values_t`` (the value of its true final observation), no return flows across an
    episode boundary, and the last step bootstraps from ``next_values[T - 1]``. Where the
    episode goes on, ``next_values[t]`` should equal ``values[t + 1]``; then the targets are
    :func:`rollax.ops.gae`'s (``gae(...)[1]``) up to float error. ``lam = 0`` gives the
    one-step targets ``r_t + gamma * (1 - terminated_t) * next_values_t``; ``lam = 1`` the
    discounted rewards to the end of each episode, bootstrapped where it was truncated or
    where the sequence stops.

    Pure and ``jit``/``vmap``-friendly (one backward ``jax.lax.scan``); ``gamma`` and
    ``lam`` are data, so changing them does not recompile.

    Args:
        rewards: float ``(T, ...)``, reward of each transition.
        values: float ``(T, ...)``, value of the observation each action was taken in. The
            targets are built from ``next_values`` alone; ``values`` fixes their dtype and is
            checked for shape, as :func:`rollax.ops.gae` takes it.
        next_values: float ``(T, ...)``, value of each transition's true successor (of
            ``final_obs`` where the episode ended).
        terminated: bool ``(T, ...)``.
        truncated: bool ``(T, ...)``.
        gamma: Discount factor: a float or an array broadcastable to ``(T, ...)`` (entry
            ``t`` discounts transition ``t``).
        lam: λ: a float or an array broadcastable to ``(T, ...)`` (entry ``t`` weights what
            flows back into step ``t``).

    Returns:
        float ``(T, ...)`` with the dtype of ``values``: the λ-return of each step.

    Raises:
        ValueError: if the per-step inputs differ in shape, or have no time axis.
    """
    shape = _check_shapes(
        rewards=rewards,
        values=values,
        next_values=next_values,
        terminated=terminated,
        truncated=truncated,
    )
    dtype = values.dtype
    gamma = _per_step(gamma, shape, dtype)
    lam = _per_step(lam, shape, dtype)
    not_terminated = 1.0 - terminated.astype(dtype)
    carry_on = _cut_last(lam * (1.0 - (terminated | truncated).astype(dtype)))
    # G_t = base_t + scale_t * G_{t+1}; base_t holds the bootstrap the λ-mix does not replace.
    scale = gamma * not_terminated * carry_on
    bootstrap = gamma * not_terminated * (1.0 - carry_on) * next_values.astype(dtype)
    base = rewards.astype(dtype) + bootstrap

    def backward(following: jax.Array, step: tuple) -> tuple[jax.Array, jax.Array]:
        b, s = step
        target = b + s * following
        return target, target

    _, targets = jax.lax.scan(backward, jnp.zeros(shape[1:], dtype), (base, scale), reverse=True)
    return targets


def retrace_targets(
    rewards: jax.Array,
    q_taken: jax.Array,
    next_expected_q: jax.Array,
    log_rhos: jax.Array,
    terminated: jax.Array,
    truncated: jax.Array,
    gamma: float | jax.Array,
    lam: float | jax.Array,
) -> jax.Array:
    """Retrace Q targets (Munos et al., 2016) of a time-major sequence of behaviour data.

    ``log_rhos[t] = log pi(a_t | s_t) - log mu(a_t | s_t)`` is the log importance ratio of
    the action taken at ``t`` (target policy ``pi``, behaviour policy ``mu``), aligned with
    the other inputs. The trace coefficient that lets step ``t + 1`` flow back into step
    ``t`` is::

        c_{t+1} = lam_t * min(1, exp(log_rhos[t + 1])) * (1 - done_t),
        done = terminated | truncated,   c_T = 0 (after the last step)

    and the targets follow, backwards::

        target_t = r_t + gamma_t * (1 - terminated_t)
                         * [next_expected_q_t + c_{t+1} * (target_{t+1} - q_taken_{t+1})]

    A terminated transition does not bootstrap; a truncated one bootstraps from
    ``next_expected_q_t``, the target policy's expected value at its true final observation;
    the trace never crosses an episode boundary or the end of the sequence. ``log_rhos[0]``
    does not matter (the first action needs no correction). Unrolled, for a constant
    ``gamma``, this is the form of the paper, with expected-SARSA errors ``delta``::

        target_t = q_taken_t + sum_{s >= t} gamma^(s-t) * (c_{t+1} * ... * c_s) * delta_s,
        delta_s  = r_s + gamma * (1 - terminated_s) * next_expected_q_s - q_taken_s

    ``lam = 0`` gives the one-step expected-SARSA targets ``r_t + gamma * (1 -
    terminated_t) * next_expected_q_t``. With ``pi == mu`` (``log_rhos = 0``) and
    ``q_taken[t + 1] == next_expected_q[t]`` wherever the episode goes on (a single action,
    or greedy ``pi`` and ``mu``), the targets are
    ``lambda_returns(rewards, q_taken, next_expected_q, terminated, truncated, gamma, lam)``.

    Pure and ``jit``/``vmap``-friendly (one backward ``jax.lax.scan``); ``gamma`` and
    ``lam`` are data, so changing them does not recompile.

    Args:
        rewards: float ``(T, ...)``, reward of each transition.
        q_taken: float ``(T, ...)``, ``Q(s_t, a_t)`` of the action taken, under the target
            network.
        next_expected_q: float ``(T, ...)``, ``E_{a ~ pi} Q(s'_t, a)`` at each transition's
            true successor ``s'_t`` (``final_obs`` where the episode ended), under the
            target network.
        log_rhos: float ``(T, ...)``, ``log pi(a_t | s_t) - log mu(a_t | s_t)``. Ratios are
            cut at 1 in log space, so a large log ratio does not overflow.
        terminated: bool ``(T, ...)``.
        truncated: bool ``(T, ...)``.
        gamma: Discount factor: a float or an array broadcastable to ``(T, ...)`` (entry
            ``t`` discounts transition ``t``).
        lam: λ of the traces: a float or an array broadcastable to ``(T, ...)`` (entry ``t``
            scales ``c_{t+1}``).

    Returns:
        float ``(T, ...)`` with the dtype of ``q_taken``: the Retrace target of
        ``Q(s_t, a_t)`` for each step.

    Raises:
        ValueError: if the per-step inputs differ in shape, or have no time axis.
    """
    shape = _check_shapes(
        rewards=rewards,
        q_taken=q_taken,
        next_expected_q=next_expected_q,
        log_rhos=log_rhos,
        terminated=terminated,
        truncated=truncated,
    )
    dtype = q_taken.dtype
    gamma = _per_step(gamma, shape, dtype)
    lam = _per_step(lam, shape, dtype)
    not_terminated = 1.0 - terminated.astype(dtype)
    carry_on = 1.0 - (terminated | truncated).astype(dtype)
    # min(1, rho) = exp(min(0, log rho)), shifted so that entry t holds c_{t+1}.
    ratios = jnp.exp(jnp.minimum(log_rhos.astype(dtype), 0.0))
    next_ratios = _cut_last(jnp.roll(ratios, -1, axis=0))
    traces = lam * next_ratios * carry_on
    discounts = gamma * not_terminated
    base = rewards.astype(dtype) + discounts * next_expected_q.astype(dtype)

    def backward(correction: jax.Array, step: tuple) -> tuple[jax.Array, jax.Array]:
        # Carried back: correction = target_{t+1} - q_taken_{t+1}.
        b, d, c, q = step
        target = b + d * c * correction
        return target - q, target

    _, targets = jax.lax.scan(
        backward,
        jnp.zeros(shape[1:], dtype),
        (base, discounts, traces, q_taken),
        reverse=True,
    )
    return targets


def nstep_targets(
    rewards: jax.Array,
    next_values: jax.Array,
    terminated: jax.Array,
    truncated: jax.Array,
    gamma: float | jax.Array,
    n: int,
) -> jax.Array:
    """n-step targets of every step of a time-major sequence that may hold several episodes.

    The target of step ``t`` sums the discounted rewards of steps ``t, t + 1, ...`` up to
    ``n`` of them, the first episode end, or the end of the sequence, whichever comes first,
    then bootstraps from ``next_values`` of the step it stopped at: not at all if that step
    terminated, from the value of its true final observation if it was truncated. This is
    :func:`rollax.ops.nstep_return` applied to the window that starts at each step, cut at
    the sequence's end. ``n = 1`` gives ``r_t + gamma * (1 - terminated_t) * next_values_t``.

    Args:
        rewards: float ``(T, ...)``, reward of each transition.
        next_values: float ``(T, ...)``, value of each transition's true successor (of
            ``final_obs`` where the episode ended).
        terminated: bool ``(T, ...)``.
        truncated: bool ``(T, ...)``.
        gamma: Discount factor (a float or a scalar array; data, no recompile).
        n: Steps summed at most (static).

    Returns:
        float ``(T, ...)`` with the dtype of ``next_values``.

    Raises:
        ValueError: if the per-step inputs differ in shape or have no time axis, or ``n`` is
            not a positive integer.
    """
    shape = _check_shapes(
        rewards=rewards, next_values=next_values, terminated=terminated, truncated=truncated
    )
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive integer (steps summed), got {n!r}")
    length = shape[0]
    dtype = next_values.dtype
    # Window k of step t reads step min(t + k, T - 1); the step T - 1 ends every window that
    # reaches it, as a truncation (a bootstrap) unless it terminated.
    at = jnp.arange(length)[:, None] + jnp.arange(n)[None, :]  # (T, n)
    idx = jnp.minimum(at, length - 1)
    last = (at >= length - 1).reshape(at.shape + (1,) * (len(shape) - 1))

    def windows(x: jax.Array) -> jax.Array:
        return jnp.moveaxis(x[idx], 1, -1)  # (T, ..., n)

    ret = nstep_return(
        windows(rewards.astype(dtype)),
        windows(terminated),
        jnp.moveaxis(truncated[idx] | last, 1, -1),
        gamma,
    )
    stop = jnp.arange(length).reshape((length,) + (1,) * (len(shape) - 1)) + ret.index
    bootstrap = jnp.take_along_axis(next_values, stop, axis=0)
    return ret.reward + ret.discount * bootstrap
