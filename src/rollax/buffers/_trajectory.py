"""Transition and sequence replay over one ring of steps per environment.

Storage is ``(num_envs, steps_per_env, ...)`` per leaf with ``steps_per_env = capacity //
num_envs``; all environments write in lockstep at one ``head``. A sequence is ``L``
consecutive steps of one environment, starting at an absolute step that is a multiple of
``period``. A start is valid when its ``L`` steps are all stored, that is when the sequence
lies between the oldest step and the newest one: no sequence ever crosses the write head.

Uniform sampling over episode-crossing sequences is computed arithmetically from the head.
Prioritized sampling, and sampling restricted to sequences inside one episode, keep a sum
tree with one leaf per start point (``num_envs * steps_per_env / period`` leaves); a start's
weight is zero until its last step is written and again from the moment its first step is
overwritten.

With ``compact=True`` each observation is stored once: ``next_obs`` is read from the next
step, and from a side store of final observations at episode ends (see ``_successors``).
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import jax
import jax.numpy as jnp

from rollax._struct import pytree_dataclass
from rollax.buffers import _successors, _sum_tree
from rollax.buffers._common import (
    BufferSample,
    check_item,
    check_positive_int,
    done_of,
    example_spec,
    has_flags,
    multiples_near,
)
from rollax.types import PRNGKey, PyTree

EpisodeMode = Literal["cross", "within", "mask"]
_EPISODE_MODES = ("cross", "within", "mask")


@pytree_dataclass
class BufferState:
    """State of a :class:`SequenceBuffer` or :class:`TransitionBuffer`.

    Attributes:
        data: The stored items, each leaf ``(num_envs, steps_per_env, *leaf_shape)``.
        head: int32 ``()``: the slot the next step is written to.
        steps: int32 ``()``: steps written per environment since ``init``.
        episode_step: int32 ``(num_envs, steps_per_env)``: each stored step's index inside
            its episode (``episodes="within"`` only, else ``None``).
        next_episode_step: int32 ``(num_envs,)``: the episode index of the next step added
            (``episodes="within"`` only, else ``None``).
        tree: sum tree (float32 levels) over start points (prioritized or ``episodes="within"``,
            else ``None``): ``priority ** priority_exponent`` for valid starts, zero
            otherwise.
        max_priority: float32 ``()``: the largest priority seen; new starts get it
            (prioritized only, else ``None``).
        successors: The side store of final observations (``compact=True`` only, else
            ``None``); ``data`` then holds the items without ``next_obs``.
    """

    data: PyTree
    head: jax.Array
    steps: jax.Array
    episode_step: jax.Array | None
    next_episode_step: jax.Array | None
    tree: tuple[jax.Array, ...] | None
    max_priority: jax.Array | None
    successors: _successors.SuccessorState | None = None


@dataclasses.dataclass(frozen=True)
class SequenceBuffer:
    """Replay of sequences of consecutive steps from ``num_envs`` environments.

    Every method is a pure function of its arguments: ``jit`` them, ``vmap`` them over
    independent buffers, call them inside ``lax.scan``. ``add`` writes in place when its
    state argument is donated::

        buffer = SequenceBuffer(capacity=100_000 * 40, num_envs=100, sequence_length=40)
        state = buffer.init(example_item)           # one step of one environment
        add = jax.jit(buffer.add, donate_argnums=0)  # no copy of the storage per call
        sample = jax.jit(buffer.sample, static_argnames="batch_size")
        state = add(state, batch)                   # leaves (100, ...) or (100, n, ...)
        batch = sample(state, key, batch_size=64)   # leaves (64, 40, ...)

    Inside a jitted training loop that carries the state, XLA updates it in place.
    """

    capacity: int
    """Steps (transitions) stored in all, over all environments; a multiple of ``num_envs``."""
    num_envs: int
    """Environments adding a step each per ``add`` (the leading axis of every added leaf)."""
    sequence_length: int = 1
    """Steps per sampled sequence, at most ``capacity // num_envs``."""
    period: int = 1
    """Stride between possible start points in the time axis; it must divide
    ``capacity // num_envs``. ``period == sequence_length`` samples non-overlapping
    sequences."""
    episodes: EpisodeMode = "cross"
    """``"cross"``: sequences may span episodes (``terminated``/``truncated`` inside tell
    where one ends); ``"within"``: only sequences inside one episode (a step ending an
    episode may be the last one); ``"mask"``: any start, with ``mask`` False and data zeroed
    after the first episode end. The last two need items with ``terminated`` and
    ``truncated`` entries."""
    prioritized: bool = False
    """Sample in proportion to ``priority ** priority_exponent`` (sum tree); new data gets
    the largest priority seen so far. Set priorities with ``update_priorities``."""
    priority_exponent: float = 0.6
    """The exponent alpha applied to priorities (0 is uniform)."""
    priority_epsilon: float = 1e-6
    """Added to every priority so that no valid sample has probability zero."""
    compact: bool = False
    """Store every observation once. Items must carry ``obs`` and ``next_obs`` (a
    :class:`~rollax.buffers.Transition` or a dict) and ``terminated``/``truncated``, and each
    environment's items must be its consecutive steps. ``next_obs`` is then read from the next
    step's ``obs``, and at an episode end from a side store of final observations: samples
    are exactly as without ``compact``, for about half the memory of image observations."""
    final_obs_slots: int | None = None
    """``compact`` only: final observations kept per environment, first in, first out
    (``None``: ``max(sequence_length, steps_per_env // 64)``). A stored step that ended an
    episode whose final observation has been pushed out is never sampled: episodes averaging
    at least ``steps_per_env / final_obs_slots`` steps never lose one."""

    def __post_init__(self) -> None:
        capacity = check_positive_int("capacity", self.capacity)
        num_envs = check_positive_int("num_envs", self.num_envs)
        length = check_positive_int("sequence_length", self.sequence_length)
        period = check_positive_int("period", self.period)
        if capacity % num_envs:
            raise ValueError(
                f"capacity={capacity:,} is not a multiple of num_envs={num_envs}: each "
                f"environment gets capacity // num_envs steps; use capacity="
                f"{multiples_near(capacity, num_envs)}"
            )
        per_env = capacity // num_envs
        if length > per_env:
            raise ValueError(
                f"sequence_length={length} is longer than the {per_env:,} steps stored per "
                f"environment (capacity={capacity:,} // num_envs={num_envs}); use "
                f"capacity >= {length * num_envs:,} or sequence_length <= {per_env}"
            )
        if per_env % period:
            raise ValueError(
                f"period={period} does not tile the {per_env:,} steps stored per environment "
                f"(capacity // num_envs); use a capacity that is a multiple of num_envs * "
                f"period = {num_envs * period:,} (e.g. "
                f"{multiples_near(capacity, num_envs * period)}) or a period dividing {per_env:,}"
            )
        if self.episodes not in _EPISODE_MODES:
            raise ValueError(f"episodes must be one of {_EPISODE_MODES}, got {self.episodes!r}")
        if not isinstance(self.prioritized, bool):
            raise TypeError(f"prioritized must be a bool, got {self.prioritized!r}")
        if not self.priority_exponent >= 0:
            raise ValueError(f"priority_exponent must be >= 0, got {self.priority_exponent}")
        if not self.priority_epsilon > 0:
            raise ValueError(f"priority_epsilon must be > 0, got {self.priority_epsilon}")
        if not isinstance(self.compact, bool):
            raise TypeError(f"compact must be a bool, got {self.compact!r}")
        if self.final_obs_slots is not None:
            if not self.compact:
                raise ValueError(
                    f"final_obs_slots={self.final_obs_slots} applies to compact buffers only; "
                    "pass compact=True or leave final_obs_slots=None"
                )
            slots = check_positive_int("final_obs_slots", self.final_obs_slots)
            if not length <= slots <= per_env:
                raise ValueError(
                    f"final_obs_slots={slots} must lie between sequence_length={length} (so "
                    f"the newest sequence can always be sampled) and the {per_env:,} steps "
                    "stored per environment (more could never be used)"
                )

    # ------------------------------------------------------------------ sizes
    @property
    def steps_per_env(self) -> int:
        """Steps kept per environment: ``capacity // num_envs``."""
        return self.capacity // self.num_envs

    @property
    def starts_per_env(self) -> int:
        """Possible start points per environment: ``steps_per_env // period``."""
        return self.steps_per_env // self.period

    @property
    def slots(self) -> int:
        """Final observations kept per environment by a compact buffer (0 otherwise)."""
        if not self.compact:
            return 0
        if self.final_obs_slots is not None:
            return self.final_obs_slots
        return max(self.sequence_length, self.steps_per_env // 64)

    @property
    def _uses_tree(self) -> bool:
        return self.prioritized or self.episodes == "within"

    # ------------------------------------------------------------------ API
    def init(self, example_item: PyTree) -> BufferState:
        """An empty buffer for items shaped like ``example_item`` (one step of one env).

        The example's values are ignored; its structure, shapes and dtypes are kept. Storage
        is allocated once, zero-filled: ``capacity * bytes_per_item`` bytes, plus the
        bookkeeping described in :class:`BufferState`.
        """
        spec = example_spec(example_item)
        if self.episodes != "cross" and not has_flags(example_item):
            raise ValueError(
                f"episodes={self.episodes!r} needs items with 'terminated' and 'truncated' "
                f"entries (a rollax.buffers.Transition, a dataclass or a dict), got "
                f"{type(example_item).__name__}; use episodes='cross' for other items"
            )
        shape = (self.num_envs, self.steps_per_env)
        successors = None
        if self.compact:
            if not (has_flags(example_item) and _successors.has_successors(example_item)):
                raise ValueError(
                    "compact=True needs items with 'obs', 'next_obs', 'terminated' and "
                    f"'truncated' entries (a rollax.buffers.Transition or a dict), got "
                    f"{type(example_item).__name__}; use compact=False for other items"
                )
            spec, next_spec = _successors.split(spec)
            if jax.tree.structure(next_spec) != jax.tree.structure(spec_obs := _obs(spec)) or any(
                (a.shape, a.dtype) != (b.shape, b.dtype)
                for a, b in zip(jax.tree.leaves(next_spec), jax.tree.leaves(spec_obs), strict=True)
            ):
                raise ValueError(
                    "compact=True reads next_obs from the next step's obs, so they must have "
                    f"the same structure, shapes and dtypes; got obs {spec_obs} and next_obs "
                    f"{next_spec}"
                )
            successors = _successors.init(spec_obs, self.num_envs, self.steps_per_env, self.slots)
        data = jax.tree.map(lambda s: jnp.zeros(shape + s.shape, s.dtype), spec)
        within = self.episodes == "within"
        return BufferState(
            data=data,
            head=jnp.zeros((), jnp.int32),
            steps=jnp.zeros((), jnp.int32),
            episode_step=jnp.zeros(shape, jnp.int32) if within else None,
            next_episode_step=jnp.zeros((self.num_envs,), jnp.int32) if within else None,
            tree=_sum_tree.init(self.num_envs * self.starts_per_env) if self._uses_tree else None,
            max_priority=jnp.ones((), jnp.float32) if self.prioritized else None,
            successors=successors,
        )

    def add(self, state: BufferState, item: PyTree) -> BufferState:
        """Append one step, leaves ``(num_envs, ...)``, or ``n`` steps, ``(num_envs, n, ...)``.

        The oldest steps are overwritten once the buffer is full. ``n`` may be at most
        ``steps_per_env``.
        """
        spec = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape[2:], x.dtype), state.data)
        patterns = ((self.num_envs,), (self.num_envs, None))
        if self.compact:
            if not _successors.has_successors(item):
                raise ValueError(
                    "this compact buffer stores items with 'obs' and 'next_obs' entries, got "
                    f"{type(item).__name__}"
                )
            item, next_obs = _successors.split(item)
            next_obs, next_lead = check_item(next_obs, _obs(spec), patterns, "item.next_obs")
        item, lead = check_item(item, spec, patterns)
        if len(lead) == 1:
            item = jax.tree.map(lambda x: x[:, None], item)
        n = jax.tree.leaves(item)[0].shape[1]
        if n > self.steps_per_env:
            raise ValueError(
                f"item adds {n} steps per environment at once, more than the "
                f"{self.steps_per_env} the buffer keeps (capacity // num_envs); split the chunk"
            )
        lost = None
        if self.compact:
            if next_lead != lead:
                raise ValueError(
                    f"item.next_obs has leading axes {next_lead}, but the rest of the item "
                    f"{lead}; they must match"
                )
            if n > self.slots:
                raise ValueError(
                    f"item adds {n} steps per environment at once, more than the "
                    f"final_obs_slots={self.slots} of this compact buffer; split the chunk or "
                    "raise final_obs_slots"
                )
            if len(lead) == 1:
                next_obs = jax.tree.map(lambda x: x[:, None], next_obs)
        slots = (state.head + jnp.arange(n, dtype=jnp.int32)) % self.steps_per_env
        if n == 1:
            data = jax.tree.map(
                lambda d, x: jax.lax.dynamic_update_slice_in_dim(d, x, state.head, axis=1),
                state.data,
                item,
            )
        else:
            data = jax.tree.map(lambda d, x: d.at[:, slots].set(x), state.data, item)
        new = state.replace(
            data=data,
            head=(state.head + n) % self.steps_per_env,
            steps=state.steps + n,
        )
        if self.compact:
            successors, lost = _successors.add(
                state.successors,
                first_step=state.steps,
                ring_slots=slots,
                done=done_of(item),
                next_obs=next_obs,
            )
            new = new.replace(successors=successors)
        if self.episodes == "within":
            done = done_of(item)  # (E, n)
            first = state.next_episode_step[:, None]
            # Episode index of each added step: counts since the last done before it.
            idx = _steps_since_reset(first, done)
            new = new.replace(
                episode_step=new.episode_step.at[:, slots].set(idx),
                next_episode_step=jnp.where(done[:, -1], 0, idx[:, -1] + 1),
            )
        if self._uses_tree:
            new = new.replace(tree=self._update_starts(new, state.steps, n, slots, lost))
        return new

    def sample(self, state: BufferState, key: PRNGKey, batch_size: int, beta: float = 0.4):
        """Draw ``batch_size`` sequences (a :class:`BufferSample`).

        Uniform over the valid start points, or in proportion to their priorities. Call only
        when ``can_sample(state)``; an empty buffer returns zeros. ``beta`` sets the
        importance weights of prioritized sampling.
        """
        batch_size = check_positive_int("batch_size", batch_size)
        if self._uses_tree:
            total = _sum_tree.total(state.tree)
            u = jax.random.uniform(key, (batch_size,), jnp.float32) * total
            index = _sum_tree.find(state.tree, u)
            probability = _sum_tree.leaves(state.tree, index) / jnp.maximum(total, 1e-30)
            env = index // self.starts_per_env
            start = (index % self.starts_per_env) * self.period
        else:
            env, start = self._uniform_draw(state, key, batch_size)
            if self.compact:
                env, start = self._redraw_lost(state, key, env, start)
            index = env * self.starts_per_env + start // self.period
            count = self._uniform_starts(state)[1]
            valid = jnp.maximum(count * self.num_envs, 1).astype(jnp.float32)
            probability = jnp.full((batch_size,), 1.0, jnp.float32) / valid
        time = (start[:, None] + jnp.arange(self.sequence_length)[None, :]) % self.steps_per_env
        item = jax.tree.map(lambda d: d[env[:, None], time], state.data)
        if self.compact:
            following = (time + 1) % self.steps_per_env
            next_obs = _successors.successors(
                state.successors,
                jax.tree.map(lambda d: d[env[:, None], following], _obs(state.data)),
                env=env[:, None],
                slot=time,
                step=self._absolute(state, time),
                newest=state.steps - 1,
                done=done_of(item),
            )
            item = _successors.join(item, next_obs)
        if self.episodes == "mask":
            done = done_of(item).astype(jnp.int32)
            ended_before = jnp.cumsum(done, axis=1) - done
            mask = ended_before == 0
            item = jax.tree.map(
                lambda x: jnp.where(
                    mask.reshape(mask.shape + (1,) * (x.ndim - 2)), x, jnp.zeros((), x.dtype)
                ),
                item,
            )
        else:
            mask = jnp.ones((batch_size, self.sequence_length), bool)
        if self.prioritized:
            weight = jnp.maximum(probability, 1e-30) ** -jnp.asarray(beta, jnp.float32)
            weight = weight / jnp.max(weight)
        else:
            weight = jnp.ones((batch_size,), jnp.float32)
        return BufferSample(
            item=item,
            mask=mask,
            index=index.astype(jnp.int32),
            probability=probability.astype(jnp.float32),
            weight=weight.astype(jnp.float32),
        )

    def can_sample(self, state: BufferState) -> jax.Array:
        """Whether at least one valid sequence is stored: bool ``()``."""
        if self._uses_tree:
            return _sum_tree.total(state.tree) > 0
        return self._uniform_starts(state)[1] > 0

    def size(self, state: BufferState) -> jax.Array:
        """int32 ``()``: steps stored, over all environments (at most ``capacity``)."""
        return jnp.minimum(state.steps, self.steps_per_env) * self.num_envs

    def update_priorities(
        self, state: BufferState, index: jax.Array, priority: jax.Array
    ) -> BufferState:
        """Set the priorities of the samples at ``index`` (``BufferSample.index``).

        ``priority`` is float ``(n,)``, non-negative (e.g. absolute TD errors). Samples whose
        start has been overwritten since they were drawn are left alone.
        """
        if not self.prioritized:
            raise ValueError(
                "update_priorities needs a buffer built with prioritized=True; this one samples "
                "uniformly"
            )
        index = jnp.asarray(index, jnp.int32)
        priority = jnp.asarray(priority, jnp.float32)
        if index.shape != priority.shape or index.ndim != 1:
            raise ValueError(
                f"index and priority must both have shape (n,), got {index.shape} and "
                f"{priority.shape}"
            )
        current = _sum_tree.leaves(state.tree, index)
        weight = (priority + self.priority_epsilon) ** self.priority_exponent
        tree = _sum_tree.set_leaves(state.tree, index, jnp.where(current > 0, weight, 0.0))
        return state.replace(
            tree=tree, max_priority=jnp.maximum(state.max_priority, jnp.max(priority))
        )

    # ------------------------------------------------------------------ internals
    def _uniform_draw(
        self, state: BufferState, key: PRNGKey, batch_size: int
    ) -> tuple[jax.Array, jax.Array]:
        """Environments and ring positions of ``batch_size`` starts, uniform over stored ones."""
        first, count = self._uniform_starts(state)
        k = jax.random.randint(key, (batch_size,), 0, jnp.maximum(count * self.num_envs, 1))
        env = k // jnp.maximum(count, 1)
        start = (first + (k % jnp.maximum(count, 1)) * self.period) % self.steps_per_env
        return env, start

    def _absolute(self, state: BufferState, slot: jax.Array) -> jax.Array:
        """The absolute step (per environment) stored at ring position ``slot``."""
        return state.steps - 1 - (state.head - 1 - slot) % self.steps_per_env

    def _intact(self, state: BufferState, env: jax.Array, start: jax.Array) -> jax.Array:
        """Whether every step of each sequence still has its successor: bool ``(B,)``."""
        time = (start[:, None] + jnp.arange(self.sequence_length)[None, :]) % self.steps_per_env
        flags = {
            name: _entry(state.data, name)[env[:, None], time]
            for name in ("terminated", "truncated")
        }
        return _successors.intact(
            state.successors, env[:, None], time, self._absolute(state, time), done_of(flags)
        ).all(axis=1)

    def _redraw_lost(
        self, state: BufferState, key: PRNGKey, env: jax.Array, start: jax.Array
    ) -> tuple[jax.Array, jax.Array]:
        """Draw again, until none is left, every sequence whose final observation is gone.

        Rejection keeps the samples uniform over the sequences that can be returned. The
        newest sequence always can (``final_obs_slots >= sequence_length``), so it ends.
        """
        batch_size = env.shape[0]

        def lost_any(carry: tuple) -> jax.Array:
            return ~carry[3].all()

        def redraw(carry: tuple) -> tuple:
            key, env, start, ok = carry
            key, sub = jax.random.split(key)
            new_env, new_start = self._uniform_draw(state, sub, batch_size)
            env, start = jnp.where(ok, env, new_env), jnp.where(ok, start, new_start)
            return key, env, start, self._intact(state, env, start)

        def check(key: PRNGKey, env: jax.Array, start: jax.Array) -> tuple:
            carry = (jax.random.fold_in(key, 1), env, start, self._intact(state, env, start))
            return jax.lax.while_loop(lost_any, redraw, carry)[1:3]

        # Nothing to check while every final observation pushed out is older than the window.
        oldest = state.steps - jnp.minimum(state.steps, self.steps_per_env)
        return jax.lax.cond(
            state.successors.lost >= oldest, check, lambda _, e, s: (e, s), key, env, start
        )

    def _uniform_starts(self, state: BufferState) -> tuple[jax.Array, jax.Array]:
        """First valid start (absolute step) and the number of valid starts per env."""
        stored = jnp.minimum(state.steps, self.steps_per_env)
        oldest = state.steps - stored
        first = -(-oldest // self.period) * self.period
        last = state.steps - self.sequence_length
        count = jnp.where(last >= first, (last - first) // self.period + 1, 0)
        return first, count

    def _update_starts(
        self,
        state: BufferState,
        old_steps: jax.Array,
        n: int,
        slots: jax.Array,
        lost: jax.Array | None = None,
    ) -> jax.Array:
        """The tree after writing ``n`` steps at absolute times ``old_steps + [0, n)``.

        Writing absolute step ``a`` invalidates the start at ``a`` (its old first step is
        gone) and validates the start at ``a - L + 1`` (its last step has arrived), if
        those are start points (multiples of ``period``). In a compact buffer, ``lost``
        (int32 ``(num_envs, n)``, -1 for none) names steps whose final observation was just
        pushed out of the side store: every still-stored start whose sequence contains one
        is invalidated.
        """
        per_env, period, length = self.steps_per_env, self.period, self.sequence_length
        envs = jnp.arange(self.num_envs, dtype=jnp.int32)[:, None]
        absolute = old_steps + jnp.arange(n, dtype=jnp.int32)  # (n,)
        tree = state.tree

        def leaf(t: jax.Array) -> jax.Array:
            return (envs * self.starts_per_env + (t % per_env) // period).reshape(-1)

        gone = jnp.broadcast_to((absolute % period) == 0, (self.num_envs, n)).reshape(-1)
        idx = leaf(slots[None, :])
        tree = _sum_tree.set_leaves(tree, idx, jnp.zeros(idx.shape, jnp.float32), gone)
        begin = absolute - (length - 1)
        # A start whose first step a later step of this chunk overwrites never becomes valid.
        oldest = old_steps + n - per_env
        if lost is not None:
            start = lost[:, :, None] - jnp.arange(length, dtype=jnp.int32)[None, None, :]
            hit = (lost[:, :, None] >= 0) & (start >= jnp.maximum(oldest, 0))
            hit = hit & (start % period == 0)
            idx = (envs[:, :, None] * self.starts_per_env + (start % per_env) // period).reshape(-1)
            tree = _sum_tree.set_leaves(
                tree, idx, jnp.zeros(idx.shape, jnp.float32), hit.reshape(-1)
            )
        ok = (begin >= 0) & (begin >= oldest) & (begin % period == 0)
        ok = jnp.broadcast_to(ok, (self.num_envs, n))
        if self.episodes == "within":
            ok = ok & (state.episode_step[:, slots] >= length - 1)
        if self.compact:
            # Within one chunk, a later episode end may already have pushed out the final
            # observation of a step inside a sequence that completes now.
            first = jnp.broadcast_to(jnp.maximum(begin, 0) % per_env, (self.num_envs, n))
            env = jnp.broadcast_to(envs, (self.num_envs, n))
            intact = self._intact(state, env.reshape(-1), first.reshape(-1))
            ok = ok & intact.reshape(self.num_envs, n)
        weight = (
            (state.max_priority + self.priority_epsilon) ** self.priority_exponent
            if self.prioritized
            else jnp.float32(1.0)
        )
        idx = leaf(jnp.maximum(begin, 0)[None, :])
        return _sum_tree.set_leaves(tree, idx, jnp.full(idx.shape, weight), ok.reshape(-1))


def _entry(item: PyTree, name: str) -> jax.Array:
    """The ``name`` entry of an item (a dict, a Transition or another dataclass)."""
    return item[name] if isinstance(item, dict) else getattr(item, name)


def _obs(item: PyTree) -> PyTree:
    """The observations of an item with an ``obs`` entry."""
    return _entry(item, "obs")


def _steps_since_reset(first: jax.Array, done: jax.Array) -> jax.Array:
    """Episode index of each of ``n`` consecutive steps.

    Args:
        first: int32 ``(E, 1)``: index of the first step.
        done: bool ``(E, n)``: whether each step ended its episode.

    Returns:
        int32 ``(E, n)``.
    """
    n = done.shape[1]
    t = jnp.arange(n, dtype=jnp.int32)[None, :]
    # The step after the last done before t starts a new episode at index 0.
    restart = jnp.where(done, t + 1, 0)
    last_restart = jax.lax.cummax(restart, axis=1)
    last_restart = jnp.concatenate([jnp.zeros_like(last_restart[:, :1]), last_restart[:, :-1]], 1)
    return jnp.where(last_restart > 0, t - last_restart, first + t).astype(jnp.int32)


__all__ = ["BufferState", "SequenceBuffer"]
