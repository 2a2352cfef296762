"""Whole episodes, padded to a maximum length, with their true lengths.

Storage is ``capacity // max_length`` slots of ``max_length`` steps. Each environment
writes its current episode straight into a slot of its own (no staging copy). An episode
longer than ``max_length`` continues in a new slot, whose ``is_episode_start`` is False, so a
long episode becomes consecutive chunks and nothing is dropped. Short episodes are kept;
steps past an episode's length read as zeros.

Eviction is first completed, first out. The slots nobody writes form a queue in the order
their chunks completed (never-used slots first). When chunks close, their slots join the
tail, in environment order for chunks that close on the same step, and each closing
environment takes the slot at the head: the oldest completed chunk. So the buffer always
holds the ``num_slots - num_envs`` most recently completed chunks, however long each took to
write, and a slot being written is never handed to another environment.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from rollax._struct import pytree_dataclass
from rollax.buffers._common import (
    check_item,
    check_positive_int,
    done_of,
    example_spec,
    has_flags,
    multiples_near,
)
from rollax.types import PRNGKey, PyTree


@pytree_dataclass
class EpisodeBufferState:
    """State of an :class:`EpisodeBuffer` with ``S = capacity // max_length`` slots.

    Attributes:
        data: Items, each leaf ``(S, max_length, *leaf_shape)``.
        length: int32 ``(S,)``: steps written to each slot.
        complete: bool ``(S,)``: the slot holds a finished episode (or a finished chunk of
            a long one) and can be sampled.
        is_episode_start: bool ``(S,)``: the slot's first step is an episode's first step
            (False for the continuation of an episode longer than ``max_length``).
        is_episode_end: bool ``(S,)``: the slot's last step ended the episode.
        env_slot: int32 ``(num_envs,)``: the slot each environment writes to.
        queue: int32 ``(S,)``: a ring whose ``S - num_envs`` entries from ``head`` on are
            the slots nobody writes, oldest completed first.
        head: int32 ``()``: the ring position of the queue's oldest entry.
        episodes: int32 ``()``: slots completed since ``init``.
    """

    data: PyTree
    length: jax.Array
    complete: jax.Array
    is_episode_start: jax.Array
    is_episode_end: jax.Array
    env_slot: jax.Array
    queue: jax.Array
    head: jax.Array
    episodes: jax.Array


@pytree_dataclass
class EpisodeSample:
    """A batch of episodes (or windows inside them) from an :class:`EpisodeBuffer`.

    Attributes:
        item: Leaves ``(batch_size, T, ...)`` with ``T`` the window or ``max_length``;
            zero past each episode's end.
        mask: bool ``(batch_size, T)``: True on real steps.
        length: int32 ``(batch_size,)``: the episode's (chunk's) length in the buffer.
        start: int32 ``(batch_size,)``: the first step of the window inside the episode.
        slot: int32 ``(batch_size,)``: the slot sampled.
        is_episode_start: bool ``(batch_size,)``: the chunk begins its episode.
        is_episode_end: bool ``(batch_size,)``: the chunk ends its episode.
    """

    item: PyTree
    mask: jax.Array
    length: jax.Array
    start: jax.Array
    slot: jax.Array
    is_episode_start: jax.Array
    is_episode_end: jax.Array


@dataclasses.dataclass(frozen=True)
class EpisodeBuffer:
    """Replay of whole episodes from ``num_envs`` environments.

    Items must carry ``terminated`` and ``truncated`` (a :class:`Transition`, a dataclass
    or a dict): they tell where an episode ends. The buffer keeps the ``num_slots -
    num_envs`` most recently completed episodes (chunks) and drops the one that completed
    first, however long it is. Pure functions, like the other buffers::

        buffer = EpisodeBuffer(capacity=100_000 * 40, num_envs=100, max_length=40)
        state = buffer.init(example_item)
        add = jax.jit(buffer.add, donate_argnums=0)
        state = add(state, batch)                               # leaves (100, ...)
        episodes = buffer.sample(state, key, batch_size=64)     # (64, 40, ...), lengths
        windows = buffer.sample(state, key, batch_size=64, window=8)
    """

    capacity: int
    """Steps stored in all: ``capacity // max_length`` episode slots, each ``max_length``
    steps long whatever the episode's true length."""
    num_envs: int
    """Environments adding a step each per ``add``."""
    max_length: int
    """Steps per slot. Longer episodes continue in the next slot (a chunk whose
    ``is_episode_start`` is False)."""

    def __post_init__(self) -> None:
        capacity = check_positive_int("capacity", self.capacity)
        num_envs = check_positive_int("num_envs", self.num_envs)
        max_length = check_positive_int("max_length", self.max_length)
        if capacity % max_length:
            raise ValueError(
                f"capacity={capacity:,} is not a multiple of max_length={max_length}: it is "
                f"split into slots of max_length steps; use capacity="
                f"{multiples_near(capacity, max_length)}"
            )
        if capacity // max_length < 2 * num_envs:
            raise ValueError(
                f"capacity={capacity:,} gives {capacity // max_length} episode slots of "
                f"max_length={max_length}; num_envs={num_envs} needs at least 2 * num_envs = "
                f"{2 * num_envs}: one being written per environment, and as many for "
                f"completed episodes so that each one stays until the next add; use capacity "
                f">= {2 * num_envs * max_length:,} or num_envs <= "
                f"{capacity // max_length // 2}"
            )

    @property
    def num_slots(self) -> int:
        """Episode slots: ``capacity // max_length``."""
        return self.capacity // self.max_length

    def init(self, example_item: PyTree) -> EpisodeBufferState:
        """An empty buffer for items shaped like ``example_item`` (one step of one env)."""
        if not has_flags(example_item):
            raise ValueError(
                "EpisodeBuffer needs items with 'terminated' and 'truncated' entries (a "
                f"rollax.buffers.Transition, a dataclass or a dict), got "
                f"{type(example_item).__name__}"
            )
        spec = example_spec(example_item)
        slots, envs = self.num_slots, self.num_envs
        # Environment i writes slot i; the queue holds the never-used slots, in order.
        return EpisodeBufferState(
            data=jax.tree.map(
                lambda s: jnp.zeros((slots, self.max_length, *s.shape), s.dtype), spec
            ),
            length=jnp.zeros((slots,), jnp.int32),
            complete=jnp.zeros((slots,), bool),
            is_episode_start=jnp.arange(slots) < envs,
            is_episode_end=jnp.zeros((slots,), bool),
            env_slot=jnp.arange(envs, dtype=jnp.int32),
            queue=jnp.roll(jnp.arange(slots, dtype=jnp.int32), -envs),
            head=jnp.zeros((), jnp.int32),
            episodes=jnp.zeros((), jnp.int32),
        )

    def add(self, state: EpisodeBufferState, item: PyTree) -> EpisodeBufferState:
        """Append one step, leaves ``(num_envs, ...)``, or ``n`` steps, ``(num_envs, n, ...)``."""
        spec = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape[2:], x.dtype), state.data)
        item, lead = check_item(item, spec, ((self.num_envs,), (self.num_envs, None)))
        if len(lead) == 1:
            return self._add_step(state, item)
        steps = jax.tree.map(lambda x: jnp.moveaxis(x, 1, 0), item)
        state, _ = jax.lax.scan(lambda s, x: (self._add_step(s, x), None), state, steps)
        return state

    def _add_step(self, state: EpisodeBufferState, item: PyTree) -> EpisodeBufferState:
        slots, envs = self.num_slots, self.num_envs
        slot = state.env_slot
        position = state.length[slot]
        data = jax.tree.map(lambda d, x: d.at[slot, position].set(x), state.data, item)
        done = done_of(item)
        length = position + 1
        closing = done | (length == self.max_length)
        # Closed slots join the queue's tail in environment order, then each closing
        # environment takes a slot from its head. The queue holds slots - envs >= envs
        # entries, so the head's slots are older than every slot that closed now, and the
        # tail's positions never reach the head's.
        rank = jnp.cumsum(closing, dtype=jnp.int32) - 1
        tail = jnp.where(closing, (state.head + slots - envs + rank) % slots, slots)
        queue = state.queue.at[tail].set(slot, mode="drop")
        new_slot = queue[(state.head + rank) % slots]
        target = jnp.where(closing, new_slot, slots)  # slots: out of range, dropped
        return EpisodeBufferState(
            data=data,
            length=state.length.at[slot].set(length).at[target].set(0, mode="drop"),
            complete=state.complete.at[slot].set(closing).at[target].set(False, mode="drop"),
            is_episode_start=state.is_episode_start.at[target].set(done, mode="drop"),
            is_episode_end=state.is_episode_end.at[slot].set(done),
            env_slot=jnp.where(closing, new_slot, slot),
            queue=queue,
            head=(state.head + jnp.sum(closing, dtype=jnp.int32)) % slots,
            episodes=state.episodes + jnp.sum(closing, dtype=jnp.int32),
        )

    def sample(
        self, state: EpisodeBufferState, key: PRNGKey, batch_size: int, window: int | None = None
    ) -> EpisodeSample:
        """Draw ``batch_size`` stored episodes, uniformly, or windows of ``window`` steps.

        A window starts uniformly among the positions where it fits in its episode (at 0 in
        an episode shorter than the window, the rest masked). Call only when
        ``can_sample(state)``.
        """
        batch_size = check_positive_int("batch_size", batch_size)
        if window is None:
            window = self.max_length
        window = check_positive_int("window", window)
        if window > self.max_length:
            raise ValueError(
                f"window={window} is longer than max_length={self.max_length}; use "
                f"window <= {self.max_length}"
            )
        slot_key, start_key = jax.random.split(key)
        weights = state.complete.astype(jnp.float32)
        total = jnp.sum(weights)
        p = jnp.where(total > 0, weights / jnp.maximum(total, 1.0), 1.0 / self.num_slots)
        slot = jax.random.choice(slot_key, self.num_slots, (batch_size,), p=p).astype(jnp.int32)
        length = state.length[slot]
        room = jnp.maximum(length - window, 0) + 1
        start = jnp.floor(
            jax.random.uniform(start_key, (batch_size,)) * room.astype(jnp.float32)
        ).astype(jnp.int32)
        start = jnp.minimum(start, room - 1)
        time = start[:, None] + jnp.arange(window, dtype=jnp.int32)[None, :]
        mask = time < length[:, None]
        time = jnp.minimum(time, self.max_length - 1)

        def gather(d: jax.Array) -> jax.Array:
            x = d[slot[:, None], time]
            return jnp.where(
                mask.reshape(mask.shape + (1,) * (x.ndim - 2)), x, jnp.zeros((), x.dtype)
            )

        return EpisodeSample(
            item=jax.tree.map(gather, state.data),
            mask=mask,
            length=length,
            start=start,
            slot=slot,
            is_episode_start=state.is_episode_start[slot],
            is_episode_end=state.is_episode_end[slot],
        )

    def can_sample(self, state: EpisodeBufferState) -> jax.Array:
        """Whether at least one finished episode (or chunk) is stored: bool ``()``."""
        return jnp.any(state.complete)

    def size(self, state: EpisodeBufferState) -> jax.Array:
        """int32 ``()``: steps stored in finished episodes."""
        return jnp.sum(jnp.where(state.complete, state.length, 0), dtype=jnp.int32)

    def num_episodes(self, state: EpisodeBufferState) -> jax.Array:
        """int32 ``()``: finished episodes (chunks) stored."""
        return jnp.sum(state.complete, dtype=jnp.int32)


__all__ = ["EpisodeBuffer", "EpisodeBufferState", "EpisodeSample"]
