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
    """The target policy's action with clipped noise (target policy smoothing).

    ``clip(action + clip(noise * policy_noise, -noise_clip, noise_clip) * half_range, low,
    high)``, where ``half_range = (high - low) / 2``: noise scales are fractions of each
    action's half range (TD3's ``max_action`` for a symmetric box).

    Args:
        action: float ``(B, A)``: the target actor's actions.
        noise: float ``(B, A)``: standard normal draws.
        policy_noise: The noise's standard deviation.
        noise_clip: Its bound.
        low: float ``(A,)``: the actions' lower bounds.
        high: float ``(A,)``: their upper bounds.
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
    """``-mean(Q1(s, pi(s)))``: the deterministic policy gradient's loss.

    Args:
        q: float ``(2, B)``: both critics' values of the actor's actions; the first is used.
    """
    return -q[0].mean()
