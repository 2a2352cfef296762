"""Core data types shared by environments, buffers and agents."""

from __future__ import annotations

from typing import Any

import jax

from rollax._struct import pytree_dataclass

__all__ = ["PRNGKey", "PyTree", "TimeStep"]

PRNGKey = jax.Array
"""A JAX random key: a typed key from ``jax.random.key`` or a raw ``uint32[2]`` key."""

PyTree = Any
"""Any nested structure of arrays that JAX can traverse."""


@pytree_dataclass
class TimeStep:
    """What one environment step returns (docs/design.md §1).

    Shapes are given for one environment; a batched environment adds a leading
    ``(num_envs,)`` axis to every field.

    Attributes:
        obs: The observation the policy acts on next. If this step ended an episode and the
            environment resets on the same step, it is the first observation of the new
            episode. float32 ``observation_space.shape``.
        reward: Reward of the transition just taken; float32 ``()``.
        terminated: The transition reached a terminal state: do not bootstrap; bool ``()``.
        truncated: The episode was cut by the time limit: bootstrap from ``final_obs``.
            Both flags can be true at once (a terminal state reached on the last allowed
            step); ``terminated`` then wins. bool ``()``.
        final_obs: The true successor observation of this transition. Equals ``obs`` where
            the episode goes on; differs from it on a same-step reset.
        info: ``episode_return`` (float32) and ``episode_length`` (int32) of the current
            episode including this step, so where ``done`` they are the finished episode's
            totals.
    """

    obs: Any
    reward: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    final_obs: Any
    info: dict[str, jax.Array]

    @property
    def done(self) -> jax.Array:
        """``terminated | truncated``: the episode ended with this transition."""
        return self.terminated | self.truncated
