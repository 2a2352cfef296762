"""TD3's target and losses as pure functions of actions and values (no networks inside)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

__all__ = ["smoothed_action", "td3_actor_loss", "td3_target"]


def smoothed_action(
    action: jax.Array,
    noise: jax.Array,
    policy_noise: jax.Array,
    noise_clip: jax.Array,
    low: jax.Array,
    high: jax.Array,
) -> jax.Array:
    """The target actor's actions ``(B, A)`` with clipped noise (target policy smoothing).

    ``clip(action + clip(noise * policy_noise, -noise_clip, noise_clip) * (high - low) / 2,
    low, high)`` for standard normal ``noise`` ``(B, A)`` and bounds ``(A,)``: noise scales
    are fractions of each action's half range (TD3's ``max_action`` for a symmetric box).
    """
    low, high = jnp.broadcast_to(low, action.shape), jnp.broadcast_to(high, action.shape)
    smoothing = jnp.clip(noise * policy_noise, -noise_clip, noise_clip) * 0.5 * (high - low)
    return jnp.clip(action + smoothing, low, high)


def td3_target(reward: jax.Array, discount: jax.Array, next_q: jax.Array) -> jax.Array:
    """The clipped double-Q target ``reward + discount * min(Q1', Q2')``.

    Args:
        reward: float ``(B,)``: (n-step) rewards.
        discount: float ``(B,)``: their bootstrap discount: 0 after a termination,
            ``gamma ** m`` otherwise (a truncation bootstraps from its true final
            observation), as :func:`rollax.ops.nstep_return` gives it.
        next_q: float ``(2, B)``: the target critics' values of the successor and the
            smoothed target action.
    """
    return jax.lax.stop_gradient(reward + discount * next_q.min(axis=0))


def td3_actor_loss(q: jax.Array) -> jax.Array:
    """``-mean(Q1(s, pi(s)))`` from both critics' values ``(2, B)`` of the actor's actions."""
    return -q[0].mean()
