"""The replay side of the off-policy driver: the buffer, what it stores, the windows it gives.

- :func:`replay_buffer`: one shard's :class:`~rollax.buffers.SequenceBuffer`
  (``buffer_size / num_shards`` transitions, windows of ``replay_length``, prioritized or
  compact as the config says).
- :func:`transition_example`: the shape of one stored transition (with ``first`` and the
  carry before the step for a recurrent learner, :func:`is_recurrent`; a feed-forward
  learner's carry is :func:`~rollax.networks.no_carry`).
- :func:`nstep_window`: a sampled batch of windows as a one-step learner reads it, with
  n-step returns that stop at a termination and bootstrap a truncation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from rollax.buffers import SequenceBuffer, Transition
from rollax.envs import VecEnv
from rollax.networks import no_carry
from rollax.ops import NStepReturn, nstep_return

__all__ = [
    "is_recurrent",
    "nstep_window",
    "replay_buffer",
    "transition_example",
]


def replay_buffer(config: Any) -> SequenceBuffer:
    """One shard's replay buffer, sized by an off-policy config.

    ``buffer_size / num_shards`` transitions from ``num_envs / num_shards`` environments,
    sampled as windows of ``replay_length`` transitions (prioritized when the config has
    ``prioritized``, storing each observation once with ``compact_replay``).
    """
    shards = config.num_shards
    return SequenceBuffer(
        capacity=config.buffer_size // shards,
        num_envs=config.num_envs // shards,
        sequence_length=config.replay_length,
        prioritized=getattr(config, "prioritized", False),
        priority_exponent=getattr(config, "priority_exponent", 0.6),
        compact=config.compact_replay,
    )


def is_recurrent(initial_carry: Callable[[int], Any]) -> bool:
    """Whether a learner with this ``initial_carry`` has a carry (leaves) to thread."""
    return bool(jax.tree.leaves(jax.eval_shape(lambda: initial_carry(1))))


def transition_example(
    obs_spec: Any, env: VecEnv, initial_carry: Callable[[int], Any] = no_carry
) -> Transition:
    """One environment's :class:`Transition` of zeros, to shape the replay buffer.

    A recurrent learner's transitions also keep ``first`` and the carry before the step.
    """
    obs = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), obs_spec)
    space = env.action_space
    memory = {}
    if is_recurrent(initial_carry):
        carry = jax.tree.map(lambda x: x[0], initial_carry(1))
        memory = {"first": jnp.zeros((), bool), "carry": carry}
    return Transition(
        obs=obs,
        action=jnp.zeros(space.shape, space.dtype),
        reward=jnp.zeros((), jnp.float32),
        terminated=jnp.zeros((), bool),
        truncated=jnp.zeros((), bool),
        next_obs=obs,
        **memory,
    )


def nstep_window(batch: Transition, gamma: jax.Array) -> tuple[Any, jax.Array, NStepReturn, Any]:
    """A sampled batch of windows ``(B, n_step, ...)`` as one-step learners read it.

    Returns:
        ``(obs, action, ret, next_obs)``: each window's first observation and action, its
        :class:`~rollax.ops.NStepReturn` (sums that stop at a termination and bootstrap a
        truncation), and the true successor the return bootstraps from (``final_obs``
        where an episode ended), leaves ``(B, ...)``.
    """
    obs = jax.tree.map(lambda x: x[:, 0], batch.obs)
    ret = nstep_return(batch.reward, batch.terminated, batch.truncated, gamma)
    rows = jnp.arange(ret.index.shape[0])
    next_obs = jax.tree.map(lambda x: x[rows, ret.index], batch.next_obs)
    return obs, batch.action[:, 0], ret, next_obs
