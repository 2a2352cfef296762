"""n-step returns that stop at termination and bootstrap through truncation."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

__all__ = ["NStepReturn", "nstep_return"]


class NStepReturn(NamedTuple):
    """An n-step return and how to bootstrap it: ``target = reward + discount * V(s')``.

    ``s'`` is the true successor (``next_obs``, the final observation at an episode end) of
    the window's step ``index``.

    Attributes:
        reward: float ``(...)``: discounted rewards up to the first episode end in the
            window, or over all ``n`` steps.
        discount: float ``(...)``: ``gamma ** m`` for the ``m`` steps summed, or 0 where the
            first episode end is a termination (no bootstrap).
        index: int32 ``(...)``: the step whose successor bootstraps: the first episode end,
            or ``n - 1``.
    """

    reward: jax.Array
    discount: jax.Array
    index: jax.Array


def nstep_return(
    rewards: jax.Array,
    terminated: jax.Array,
    truncated: jax.Array,
    gamma: float | jax.Array,
) -> NStepReturn:
    """The n-step return of windows of ``n`` consecutive transitions of one environment.

    Rewards are summed up to the first step that ends an episode. If that step
    *terminated*, nothing is bootstrapped; if it was *truncated*, the return bootstraps
    from its true final observation with ``gamma ** m``; if no step ends the episode, from
    the last step's successor with ``gamma ** n``. Steps after an episode end (the next
    episode) never count. With ``n = 1`` this is the one-step target ``r + gamma * (1 -
    terminated) * V(s')``.

    Args:
        rewards: float ``(..., n)``: rewards of the window's transitions, time last.
        terminated: bool ``(..., n)``.
        truncated: bool ``(..., n)``.
        gamma: Discount factor (a float or a scalar array).

    Returns:
        :class:`NStepReturn` with leaves shaped ``(...)``.
    """
    dtype = rewards.dtype if jnp.issubdtype(rewards.dtype, jnp.floating) else jnp.float32
    rewards = rewards.astype(dtype)
    gamma = jnp.asarray(gamma, dtype)
    n = rewards.shape[-1]
    batch = rewards.shape[:-1]
    total = jnp.zeros(batch, dtype)
    scale = jnp.ones(batch, dtype)  # gamma ** k while no episode has ended
    alive = jnp.ones(batch, bool)
    discount = jnp.zeros(batch, dtype)
    index = jnp.full(batch, n - 1, jnp.int32)
    for k in range(n):
        total = total + jnp.where(alive, scale * rewards[..., k], 0.0)
        scale = scale * gamma
        ends = alive & (terminated[..., k] | truncated[..., k])
        index = jnp.where(ends, k, index)
        discount = jnp.where(ends, jnp.where(terminated[..., k], 0.0, scale), discount)
        alive = alive & ~ends
    discount = jnp.where(alive, scale, discount)
    return NStepReturn(total, discount, index)
