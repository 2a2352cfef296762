"""Compact replay: every observation stored once, the true successors kept on the side.

A buffer built with ``compact=True`` stores a transition's ``obs`` in its ring and drops its
``next_obs``. When it is sampled, the successor of step ``t`` of an environment is:

* ``obs`` of step ``t + 1`` of that environment, when step ``t`` did not end an episode and
  is not the newest;
* otherwise the ``next_obs`` it was added with, kept in a side store: at an episode end the
  *final observation* (``final_obs``, the true last observation, not the next episode's
  first), and for the newest step the observation the ring does not have yet.

The side store is a ring of ``final_obs_slots + 1`` entries per environment. Every added step
writes its ``next_obs`` to the *open* entry and remembers which entry that was; a step that
ends an episode *commits* it, and the next entry opens. So the open entry always holds the
newest step's successor, and the last ``final_obs_slots`` episode ends keep theirs. When an
environment has ended more episodes than that within its stored window, the oldest of those
episode ends lose their final observation: a sample that contains such a step is never drawn
(uniform sampling redraws it, sum-tree sampling zeroes its weight). With at least
``sequence_length`` slots the newest sequence is always drawable.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rollax._struct import pytree_dataclass
from rollax.types import PyTree

__all__ = [
    "SuccessorState",
    "add",
    "has_successors",
    "init",
    "intact",
    "join",
    "nbytes",
    "split",
    "successors",
]


@pytree_dataclass
class SuccessorState:
    """The side store of a compact buffer.

    ``E`` is ``num_envs``, ``K`` ``final_obs_slots`` and ``S`` ``steps_per_env``.

    Attributes:
        final_obs: Observation leaves ``(E, K + 1, *obs_shape)``: the final observations of
            the last ``K`` episode ends, and in the open entry the newest step's successor.
        final_time: int32 ``(E, K + 1)``: for each entry, the absolute step (per environment)
            whose final observation it holds, or ``-2 - step`` when it holds the successor of
            a step that did not end an episode; -1 while empty.
        entry: uint16 ``(E, S)`` (int32 above 65,535 slots): the entry each stored step wrote
            its ``next_obs`` to.
        ends: int32 ``(E,)``: episode ends written per environment since ``init`` (the open
            entry is ``ends % (K + 1)``).
        lost: int32 ``()``: the newest step whose final observation has been pushed out,
            over all environments (-1 while none): while it is older than the stored window,
            every stored step is intact and sampling skips the check.
    """

    final_obs: PyTree
    final_time: jax.Array
    entry: jax.Array
    ends: jax.Array
    lost: jax.Array


def entry_dtype(slots: int) -> np.dtype:
    """The narrowest dtype that indexes ``slots + 1`` entries (uint16 or int32)."""
    return np.dtype(np.uint16) if slots < np.iinfo(np.uint16).max else np.dtype(np.int32)


def init(obs_spec: PyTree, num_envs: int, steps_per_env: int, slots: int) -> SuccessorState:
    """An empty side store for observations shaped like ``obs_spec`` (ShapeDtypeStructs)."""
    return SuccessorState(
        final_obs=jax.tree.map(
            lambda s: jnp.zeros((num_envs, slots + 1, *s.shape), s.dtype), obs_spec
        ),
        final_time=jnp.full((num_envs, slots + 1), -1, jnp.int32),
        entry=jnp.zeros((num_envs, steps_per_env), entry_dtype(slots)),
        ends=jnp.zeros((num_envs,), jnp.int32),
        lost=jnp.full((), -1, jnp.int32),
    )


def nbytes(obs_spec: PyTree, num_envs: int, steps_per_env: int, slots: int) -> int:
    """Bytes of :func:`init`'s state: ``E * ((K + 1) * (obs + 4) + S * entry + 4) + 4``."""
    obs = sum(int(np.prod(s.shape)) * np.dtype(s.dtype).itemsize for s in jax.tree.leaves(obs_spec))
    entry = entry_dtype(slots).itemsize
    return num_envs * ((slots + 1) * (obs + 4) + steps_per_env * entry + 4) + 4


def add(
    state: SuccessorState,
    *,
    first_step: jax.Array,
    ring_slots: jax.Array,
    done: jax.Array,
    next_obs: PyTree,
) -> tuple[SuccessorState, jax.Array]:
    """Record ``n`` consecutive steps of every environment.

    Args:
        state: The side store.
        first_step: int32 ``()``: the absolute step of the first of the ``n``.
        ring_slots: int32 ``(n,)``: where the ring stores them.
        done: bool ``(E, n)``: which of them ended an episode.
        next_obs: Leaves ``(E, n, *obs_shape)``: their true successors.

    Returns:
        The new side store, and int32 ``(E, n)``: the steps whose final observation was
        pushed out by these writes, else -1. ``n`` must not exceed ``K``.
    """
    num_envs, n = done.shape
    size = state.final_time.shape[1]
    envs = jnp.arange(num_envs)[:, None]
    step = first_step + jnp.arange(n, dtype=jnp.int32)[None, :]
    count = done.astype(jnp.int32)
    entry = (state.ends[:, None] + jnp.cumsum(count, axis=1) - count) % size  # (E, n)
    # Within a chunk, a step that neither ends an episode nor is the last one is followed
    # by its successor in the ring: only the others write (to distinct entries).
    if n == 1:
        write = entry
    else:
        last = jnp.arange(n)[None, :] == n - 1
        write = jnp.where(done | last, entry, size)  # out of bounds: dropped
    old = state.final_time[envs, write.clip(max=size - 1)]
    lost = jnp.where((write < size) & (old >= 0), old, -1)
    time = jnp.where(done, step, -2 - step)
    if n == 1:
        entries = jax.lax.dynamic_update_slice_in_dim(
            state.entry, entry.astype(state.entry.dtype), ring_slots[0], axis=1
        )
    else:
        entries = state.entry.at[:, ring_slots].set(entry.astype(state.entry.dtype))
    new = SuccessorState(
        final_obs=jax.tree.map(
            lambda final, x: final.at[envs, write].set(x, mode="drop"),
            state.final_obs,
            next_obs,
        ),
        final_time=state.final_time.at[envs, write].set(time, mode="drop"),
        entry=entries,
        ends=state.ends + count.sum(axis=1),
        lost=jnp.maximum(state.lost, lost.max()),
    )
    return new, lost


def intact(
    state: SuccessorState, env: jax.Array, slot: jax.Array, step: jax.Array, done: jax.Array
) -> jax.Array:
    """Whether each sampled step still has its successor: bool, the shape of ``slot``.

    ``env``, ``slot`` (ring position) and ``step`` (absolute step) index the sampled steps;
    ``done`` says which ended an episode. Only those need their side entry, and it must
    still hold their final observation.
    """
    entry = state.entry[env, slot].astype(jnp.int32)
    return ~done | (state.final_time[env, entry] == step)


def successors(
    state: SuccessorState,
    following: PyTree,
    *,
    env: jax.Array,
    slot: jax.Array,
    step: jax.Array,
    newest: jax.Array,
    done: jax.Array,
) -> PyTree:
    """The true ``next_obs`` of sampled steps.

    Args:
        state: The side store.
        following: Observation leaves ``(*B, *obs_shape)``: what the ring holds one position
            after each sampled step (its successor, unless it ended an episode or is the
            newest).
        env: int32 ``B``: the environment of each sampled step.
        slot: int32 ``B``: its ring position.
        step: int32 ``B``: its absolute step in its environment.
        newest: int32 ``()``: the newest absolute step.
        done: bool ``B``: which sampled steps ended an episode.

    Returns:
        Observation leaves ``(*B, *obs_shape)``.
    """
    from_side = done | (step == newest)
    entry = state.entry[env, slot].astype(jnp.int32)

    def pick(ring: jax.Array, side: jax.Array) -> jax.Array:
        flag = from_side.reshape(from_side.shape + (1,) * (ring.ndim - from_side.ndim))
        return jnp.where(flag, side[env, entry], ring)

    return jax.tree.map(pick, following, state.final_obs)


def has_successors(item: Any) -> bool:
    """Whether ``item`` carries ``obs`` and ``next_obs`` entries (a Transition or a dict)."""
    if isinstance(item, dict):
        return "obs" in item and "next_obs" in item
    return hasattr(item, "obs") and hasattr(item, "next_obs")


def split(item: Any) -> tuple[Any, Any]:
    """``(item without next_obs, next_obs)``: what the ring stores, and the successors."""
    if isinstance(item, dict):
        return {k: v for k, v in item.items() if k != "next_obs"}, item["next_obs"]
    return item.replace(next_obs=None), item.next_obs


def join(stored: Any, next_obs: Any) -> Any:
    """The item of :func:`split` put back together."""
    if isinstance(stored, dict):
        return {**stored, "next_obs": next_obs}
    return stored.replace(next_obs=next_obs)
