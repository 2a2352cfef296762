"""PPO's loss as a pure function of per-sample quantities (no networks inside)."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

__all__ = ["PPOLossTerms", "ppo_loss"]


class PPOLossTerms(NamedTuple):
    """The parts of PPO's loss, each a float32 scalar.

    Attributes:
        policy_loss: The clipped surrogate, negated (lower is better).
        value_loss: Half the mean squared error of the values (clipped with ``clip_value``).
        entropy: Mean entropy of the policy.
        approx_kl: Estimate of KL(old || new): mean of ``(r - 1) - log r``.
    """

    policy_loss: jax.Array
    value_loss: jax.Array
    entropy: jax.Array
    approx_kl: jax.Array


def ppo_loss(
    log_prob: jax.Array,
    old_log_prob: jax.Array,
    advantage: jax.Array,
    value: jax.Array,
    old_value: jax.Array,
    target: jax.Array,
    entropy: jax.Array,
    *,
    clip_eps: jax.Array | float,
    vf_coef: jax.Array | float,
    ent_coef: jax.Array | float,
    clip_value: bool = False,
    normalize_advantages: bool = True,
) -> tuple[jax.Array, PPOLossTerms]:
    """The clipped PPO objective of one minibatch (Schulman et al., 2017).

    Args:
        log_prob: float32 ``(B,)``: log-probabilities of the taken actions now.
        old_log_prob: float32 ``(B,)``: their log-probabilities when collected.
        advantage: float32 ``(B,)``: advantage estimates (GAE).
        value: float32 ``(B,)``: the critic's values now.
        old_value: float32 ``(B,)``: the values when collected.
        target: float32 ``(B,)``: value targets (advantage + old value).
        entropy: float32 ``(B,)``: the policy's entropy at each observation.
        clip_eps: Clipping range of the ratio (and of the value update with ``clip_value``).
        vf_coef: Weight of the value loss.
        ent_coef: Weight of the entropy bonus.
        clip_value: Clip the value update around ``old_value``, as in the original code.
        normalize_advantages: Standardize ``advantage`` within the minibatch first.

    Returns:
        ``(total, terms)``: ``policy_loss + vf_coef * value_loss - ent_coef * entropy``
        and :class:`PPOLossTerms`.
    """
    entropy = entropy.mean()
    if normalize_advantages:
        advantage = (advantage - advantage.mean()) / (advantage.std() + 1e-8)
    ratio = jnp.exp(log_prob - old_log_prob)
    clipped = jnp.clip(ratio, 1.0 - clip_eps, 1.0 + clip_eps)
    policy_loss = -jnp.minimum(ratio * advantage, clipped * advantage).mean()
    value_loss = (value - target) ** 2
    if clip_value:
        v_clipped = old_value + jnp.clip(value - old_value, -clip_eps, clip_eps)
        value_loss = jnp.maximum(value_loss, (v_clipped - target) ** 2)
    value_loss = 0.5 * value_loss.mean()
    total = policy_loss + vf_coef * value_loss - ent_coef * entropy
    approx_kl = ((ratio - 1.0) - (log_prob - old_log_prob)).mean()
    return total, PPOLossTerms(policy_loss, value_loss, entropy, approx_kl)
