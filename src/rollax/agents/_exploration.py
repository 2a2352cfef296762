"""Epsilon-greedy exploration, shared by the Q-learning agents (DQN, PQN)."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from rollax.training import check_fields
from rollax.types import PRNGKey

__all__ = ["EpsilonGreedyConfig", "epsilon_greedy", "linear_epsilon"]


@dataclasses.dataclass(frozen=True)
class EpsilonGreedyConfig:
    """The epsilon-greedy schedule's fields, for a configuration to inherit."""

    exploration_start: float = 1.0
    """Epsilon of the epsilon-greedy policy at the start."""
    exploration_end: float = 0.05
    """Epsilon after the schedule."""
    exploration_fraction: float = 0.5
    """Fraction of total_steps over which epsilon decays linearly."""

    def validate_exploration(self) -> None:
        """Raise a ``ValueError`` naming the first field outside its range."""
        check_fields(self, "positive", "exploration_fraction")
        check_fields(
            self, "unit_interval", "exploration_start", "exploration_end", "exploration_fraction"
        )


def linear_epsilon(start: jax.Array, end: jax.Array, progress: jax.Array) -> jax.Array:
    """Epsilon ``progress`` of the way through its schedule (clipped to [0, 1]), then ``end``."""
    frac = jnp.clip(progress, 0.0, 1.0)
    return start + frac * (end - start)


def epsilon_greedy(q: jax.Array, key: PRNGKey, eps: jax.Array) -> jax.Array:
    """int32 actions ``(B,)`` from Q-values ``(B, A)``.

    Greedy, or uniform with probability ``eps`` (a scalar, or one per row).
    """
    greedy = jnp.argmax(q, axis=-1).astype(jnp.int32)
    k_explore, k_action = jax.random.split(key)
    batch = greedy.shape
    explore = jax.random.uniform(k_explore, batch) < eps
    random = jax.random.randint(k_action, batch, 0, q.shape[-1], jnp.int32)
    return jnp.where(explore, random, greedy)
