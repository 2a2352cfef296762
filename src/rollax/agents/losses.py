"""The losses more than one agent learns with, as pure functions of values (no networks).

- Q-learning (DQN, PQN): :func:`q_learning_loss` of the taken actions' Q-values against
  fixed targets, and :func:`next_state_value`, the bootstrap value of successors (double
  Q-learning or the target's maximum).
- Twin critics (SAC, TD3): :func:`twin_critic_loss`.

Each algorithm's own targets and actor losses stay in its package (``dqn.sequences``,
``sac.losses``, ``td3.losses``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax

__all__ = ["next_state_value", "q_learning_loss", "twin_critic_loss"]


def next_state_value(
    q_next_online: jax.Array, q_next_target: jax.Array, double_q: bool = True
) -> jax.Array:
    """The bootstrap value of successor states: float32 ``(...)``.

    Args:
        q_next_online: float ``(..., A)``: the online network's Q-values of the successors.
        q_next_target: float ``(..., A)``: the target network's.
        double_q: Double DQN (van Hasselt et al., 2016): the online network picks the
            action, the target network values it. Otherwise the target's maximum.
    """
    if not double_q:
        return q_next_target.max(axis=-1)
    action = jnp.argmax(q_next_online, axis=-1)
    return jnp.take_along_axis(q_next_target, action[..., None], axis=-1)[..., 0]


def q_learning_loss(
    q: jax.Array,
    action: jax.Array,
    target: jax.Array,
    weight: jax.Array | None = None,
    loss: str = "huber",
) -> tuple[jax.Array, jax.Array]:
    """The TD loss of the taken actions' Q-values against fixed targets.

    Args:
        q: float ``(B, A)``: the online network's Q-values of the observations.
        action: int ``(B,)``: the actions taken.
        target: float ``(B,)``: the targets (gradients do not flow into them).
        weight: float ``(B,)``: importance weights of prioritized replay (``None``: ones).
        loss: ``"huber"`` (delta 1) or ``"mse"`` (half the squared error).

    Returns:
        ``(loss, td_error)``: the weighted mean loss, and float32 ``(B,)`` errors
        ``target - Q(s, a)`` (for new priorities).
    """
    chosen = jnp.take_along_axis(q, action.astype(jnp.int32)[:, None], axis=-1)[:, 0]
    td_error = jax.lax.stop_gradient(target) - chosen
    if loss == "huber":
        per_sample = optax.huber_loss(td_error, delta=1.0)
    elif loss == "mse":
        per_sample = 0.5 * td_error**2
    else:
        raise ValueError(f"loss must be 'huber' or 'mse', got {loss!r}.")
    if weight is not None:
        per_sample = per_sample * weight
    return per_sample.mean(), td_error


def twin_critic_loss(q: jax.Array, target: jax.Array) -> jax.Array:
    """Half the squared error of both critics, summed over critics, averaged over the batch.

    Args:
        q: float ``(2, B)``: both critics' values of the stored ``(s, a)``.
        target: float ``(B,)``: the critics' shared target (SAC's soft target, TD3's
            smoothed one).
    """
    return 0.5 * ((q - target[None, :]) ** 2).mean(axis=1).sum()
