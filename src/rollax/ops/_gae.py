"""Generalized advantage estimation that keeps termination and truncation apart."""

from __future__ import annotations

import jax
import jax.numpy as jnp

__all__ = ["gae"]


def gae(
    rewards: jax.Array,
    values: jax.Array,
    next_values: jax.Array,
    terminated: jax.Array,
    truncated: jax.Array,
    gamma: float | jax.Array,
    lam: float | jax.Array,
) -> tuple[jax.Array, jax.Array]:
    """Advantages and value targets of a time-major rollout (Schulman et al., 2016).

    For each transition ``t``::

        delta_t = r_t + gamma * (1 - terminated_t) * next_values_t - values_t
        A_t     = delta_t + gamma * lam * (1 - done_t) * A_{t+1},   done = terminated | truncated

    so a terminated transition does not bootstrap, a truncated one bootstraps from the value
    of its true successor (``final_obs``), and no advantage flows across an episode boundary
    either way. With same-step autoreset, ``next_values[t]`` is the value of
    ``timestep.final_obs`` at ``t``; where the episode goes on it equals ``values[t + 1]``.

    Args:
        rewards: float ``(T, ...)``, reward of each transition.
        values: float ``(T, ...)``, value of the observation each action was taken in.
        next_values: float ``(T, ...)``, value of each transition's true successor.
        terminated: bool ``(T, ...)``.
        truncated: bool ``(T, ...)``.
        gamma: Discount factor (a float or a scalar array, so it can vary without recompiling).
        lam: GAE's lambda.

    Returns:
        ``(advantages, returns)``, both ``(T, ...)`` with the dtype of ``values``;
        ``returns = advantages + values`` are the value targets.
    """
    dtype = values.dtype
    gamma = jnp.asarray(gamma, dtype)
    lam = jnp.asarray(lam, dtype)
    not_terminated = 1.0 - terminated.astype(dtype)
    carry_on = 1.0 - (terminated | truncated).astype(dtype)
    deltas = rewards.astype(dtype) + gamma * not_terminated * next_values - values

    def backward(advantage: jax.Array, step: tuple) -> tuple[jax.Array, jax.Array]:
        delta, keep = step
        advantage = delta + gamma * lam * keep * advantage
        return advantage, advantage

    _, advantages = jax.lax.scan(
        backward, jnp.zeros_like(deltas[0]), (deltas, carry_on), reverse=True
    )
    return advantages, advantages + values
