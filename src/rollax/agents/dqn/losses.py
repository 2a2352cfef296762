"""R2D2's sequence priorities, a pure function of TD errors.

The Q-learning loss DQN shares with PQN is :mod:`rollax.agents.losses`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

__all__ = ["sequence_priority"]


def sequence_priority(td_error: jax.Array, eta: float = 0.9) -> jax.Array:
    """R2D2's priority of each sequence: ``eta * max |td| + (1 - eta) * mean |td|``.

    Args:
        td_error: float ``(T, B)``: the TD errors of ``B`` sequences of ``T`` steps.
        eta: Weight of the largest error.

    Returns:
        float32 ``(B,)``.
    """
    size = jnp.abs(td_error)
    return eta * size.max(axis=0) + (1.0 - eta) * size.mean(axis=0)
