"""SAC's soft target and its actor's and temperature's losses, as pure functions.

Its critics' loss, which TD3 shares, is :func:`rollax.agents.losses.twin_critic_loss`.
"""

from __future__ import annotations

import jax

__all__ = ["sac_actor_loss", "sac_alpha_loss", "soft_target"]


def soft_target(
    reward: jax.Array,
    discount: jax.Array,
    next_q: jax.Array,
    next_log_prob: jax.Array,
    alpha: jax.Array,
) -> jax.Array:
    """The soft Bellman target ``reward + discount * (min(Q1', Q2') - alpha * log pi(a'|s'))``.

    Args:
        reward: float ``(B,)``: (n-step) rewards.
        discount: float ``(B,)``: their bootstrap discount: 0 after a termination,
            ``gamma ** m`` otherwise (a truncation bootstraps from its true final
            observation), as :func:`rollax.ops.nstep_return` gives it.
        next_q: float ``(2, B)``: the target critics' values of ``(s', a')``, ``a'`` drawn
            from the current policy at the successor ``s'``.
        next_log_prob: float ``(B,)``: ``log pi(a'|s')``.
        alpha: The entropy temperature.
    """
    soft_value = next_q.min(axis=0) - alpha * next_log_prob
    return jax.lax.stop_gradient(reward + discount * soft_value)


def sac_actor_loss(q: jax.Array, log_prob: jax.Array, alpha: jax.Array) -> jax.Array:
    """``mean(alpha * log pi(a|s) - min(Q1, Q2)(s, a))`` for actions drawn from the policy.

    Args:
        q: float ``(2, B)``: the critics' values of the sampled actions.
        log_prob: float ``(B,)``: their log-probabilities (differentiable).
        alpha: The entropy temperature (held fixed here).
    """
    return (jax.lax.stop_gradient(alpha) * log_prob - q.min(axis=0)).mean()


def sac_alpha_loss(log_alpha: jax.Array, log_prob: jax.Array, target_entropy: float) -> jax.Array:
    """The temperature's loss ``-mean(log_alpha * (log pi(a|s) + target_entropy))``.

    Its gradient raises alpha while the policy's entropy is below the target and lowers it
    above.
    """
    return -(log_alpha * jax.lax.stop_gradient(log_prob + target_entropy)).mean()
