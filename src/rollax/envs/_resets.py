"""Reset strategies: how a batch computes fresh initial states (docs/design.md §2).

A strategy decides how the environments of a batch that need a reset get one.

Each strategy is a small frozen dataclass with two pure functions: ``init`` builds whatever
state it carries (a pool of states, cached first states, or nothing) and ``apply`` resets the
environments selected by a mask. All fresh strategies draw from the environment's reset
distribution with keys used nowhere else; they differ only in what they compute and when.

Shapes: ``N`` is the batch size. ``mask`` is bool ``(N,)``; every per-environment leaf has a
leading ``N`` axis.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar

import jax
import jax.numpy as jnp

from rollax._struct import pytree_dataclass
from rollax.envs._base import Environment, EnvParams
from rollax.types import PRNGKey

__all__ = [
    "RESET_STRATEGIES",
    "Cached",
    "Compact",
    "EveryStep",
    "OnDone",
    "Pool",
    "ResetPool",
    "Starts",
    "default_reset_strategy",
    "make_reset_strategy",
]


# ---------------------------------------------------------------------------- helpers


def select(mask: jax.Array, on_true: Any, on_false: Any) -> Any:
    """Per-environment ``where`` over two pytrees whose leaves lead with ``mask``'s axis."""

    def where(a: jax.Array, b: jax.Array) -> jax.Array:
        m = mask.reshape(mask.shape + (1,) * (jnp.ndim(a) - mask.ndim))
        return jnp.where(m, a, b)

    return jax.tree.map(where, on_true, on_false)


def at_most_once(pred: jax.Array, fn: Any, operand: Any) -> Any:
    """``fn(operand)`` if ``pred`` else ``operand``, computing ``fn`` only when needed.

    Like ``lax.cond`` without a false branch, but written as a ``while_loop`` that runs at
    most once, so that it stays cheap under ``vmap`` too: a batched ``cond`` computes both
    branches for every member, a batched ``while_loop`` runs its body only when some member's
    predicate holds (and keeps the others unchanged).
    """

    def body(carry: tuple) -> tuple:
        _, value = carry
        return jnp.zeros((), jnp.bool_), fn(value)

    return jax.lax.while_loop(lambda carry: carry[0], body, (pred, operand))[1]


def gather_params(params: EnvParams, axes: Any, index: jax.Array) -> EnvParams:
    """The params of the environments at ``index``.

    Per-environment leaves are gathered, shared leaves kept.
    """
    if axes is None:
        return params
    return jax.tree.map(lambda p, a: p if a is None else jnp.asarray(p)[index], params, axes)


@dataclasses.dataclass(frozen=True)
class Starts:
    """Draws fresh initial states (a trace-time helper closed over env and params).

    Attributes:
        env: The environment definition.
        params: The batch's params; leaves may carry one value per environment.
        axes: For each params leaf, 0 if it carries one value per environment, else None;
            ``None`` altogether for a single environment.
    """

    env: Environment
    params: EnvParams
    axes: Any

    @property
    def per_env_params(self) -> bool:
        """Whether some params leaf carries one value per environment."""
        return self.axes is not None and any(
            a == 0 for a in jax.tree.leaves(self.axes, is_leaf=lambda x: x is None) if a is not None
        )

    def shared(self) -> Starts:
        """The same draws with shared params.

        Each per-environment leaf is reduced to its first value: only valid where no reset
        reads such a leaf (see the pool).
        """
        if not self.per_env_params:
            return self
        params = jax.tree.map(
            lambda p, a: p if a is None else jnp.asarray(p)[0], self.params, self.axes
        )
        return Starts(self.env, params, None)

    def per_env_reset_params(self) -> list[str]:
        """Paths of the per-environment params leaves that a reset or an observation reads.

        Found by tracing ``reset_env`` and ``observe`` once (at trace time, nothing runs):
        a leaf that neither reads, such as a physics constant used only by ``step_env``,
        may differ between environments even when initial states are drawn ahead of time.
        """
        if not self.per_env_params:
            return []
        default = self.env.default_params
        with_paths, treedef = jax.tree_util.tree_flatten_with_path(default)

        def reset_and_observe(*leaves: Any) -> Any:
            params = jax.tree.unflatten(treedef, leaves)
            core = self.env.reset_env(jax.random.key(0), params)
            return core, self.env.observe(core, params)

        jaxpr = jax.make_jaxpr(reset_and_observe)(*(leaf for _, leaf in with_paths)).jaxpr
        read = {v for eqn in jaxpr.eqns for v in eqn.invars if not hasattr(v, "val")}
        read |= {v for v in jaxpr.outvars if not hasattr(v, "val")}
        # The axes as the params' leaves, one each: a subtree the params hold as None (a
        # task without model values) is no leaf there, though the axes tree names it.
        axes = treedef.flatten_up_to(self.axes)
        return [
            jax.tree_util.keystr(path)
            for (path, _), axis, var in zip(with_paths, axes, jaxpr.invars, strict=True)
            if axis == 0 and var in read
        ]

    def draw(self, keys: PRNGKey, index: jax.Array | None = None) -> tuple[PRNGKey, Any, Any]:
        """Split each key once; reset with one child, keep the other.

        Args:
            keys: ``(K,)`` keys, one per initial state to draw.
            index: ``(K,)`` environment indices whose per-environment params to use, or
                ``None`` to use the params as they are (shared, or already one per key).

        Returns:
            ``(next_keys, core, obs)``, each with a leading ``K`` axis.

        An environment with a ``reset_chunk`` smaller than ``K`` is reset that many keys at
        a time.
        """
        params = self.params if index is None else gather_params(self.params, self.axes, index)
        axes = self.axes if self.per_env_params else None

        def one(key: PRNGKey, params: EnvParams) -> tuple[PRNGKey, Any, Any]:
            next_key, reset_key = jax.random.split(key)
            core = self.env.reset_env(reset_key, params)
            return next_key, core, self.env.observe(core, params)

        chunk = self.env.reset_chunk
        if chunk is None or keys.shape[0] <= chunk:
            return jax.vmap(one, in_axes=(0, axes))(keys, params)
        if axes is None:
            return jax.lax.map(lambda key: one(key, params), keys, batch_size=chunk)
        # Per-key params: map over the keys and the per-environment leaves together.
        mapped = jax.tree.map(lambda p, a: None if a is None else p, params, axes)

        def one_of(args: tuple) -> tuple[PRNGKey, Any, Any]:
            key, own = args
            merged = jax.tree.map(lambda p, a, o: p if a is None else o, params, axes, own)
            return one(key, merged)

        return jax.lax.map(one_of, (keys, mapped), batch_size=chunk)


# ---------------------------------------------------------------------------- strategies


def reset_selected(
    starts: Starts, mask: jax.Array, core: Any, key: PRNGKey, obs: Any
) -> tuple[Any, PRNGKey, Any]:
    """Draw a fresh state for every environment and keep it where ``mask``."""
    next_keys, new_core, start_obs = starts.draw(key)
    return select(mask, new_core, core), select(mask, next_keys, key), select(mask, start_obs, obs)


class _Stateless:
    """Shared by the fresh strategies that keep no state of their own."""

    fresh: ClassVar[bool] = True
    per_env_state: ClassVar[bool] = False

    def init(self, starts: Starts, key: PRNGKey, core: Any, num_envs: int) -> Any:
        """No state of its own."""
        return None


@dataclasses.dataclass(frozen=True)
class EveryStep(_Stateless):
    """Compute a fresh reset for every environment on every call; keep it where ``mask``.

    The simplest strategy (gymnax's), and the reference the others are tested against.
    """

    name: ClassVar[str] = "every_step"

    def apply(
        self, starts: Starts, state: Any, mask: jax.Array, obs: Any
    ) -> tuple[Any, PRNGKey, Any, Any]:
        """Returns ``(core, key, obs, strategy_state)`` with the masked environments reset."""
        return (*reset_selected(starts, mask, state.core, state.key, obs), state.resets)


@dataclasses.dataclass(frozen=True)
class OnDone(_Stateless):
    """Like :class:`EveryStep`, but only on calls where some environment needs a reset.

    A conditional outside the batch (:func:`at_most_once`): free on the steps where no
    episode ends.
    """

    name: ClassVar[str] = "on_done"

    def apply(
        self, starts: Starts, state: Any, mask: jax.Array, obs: Any
    ) -> tuple[Any, PRNGKey, Any, Any]:
        """Returns ``(core, key, obs, strategy_state)`` with the masked environments reset."""
        core, key, obs = at_most_once(
            mask.any(),
            lambda carry: reset_selected(starts, mask, *carry),
            (state.core, state.key, obs),
        )
        return core, key, obs, state.resets


def inclusive_count(mask: jax.Array) -> jax.Array:
    """``cumsum(mask)`` as int32, computed by counting bits.

    On CPU, XLA's cumsum is a log-depth chain of small ops that costs more than the
    environment step itself. Here the mask is packed into 32-bit words; an entry's count is
    the set bits at or below it in its word (one ``population_count``) plus the bits of the
    words before (a cumsum over only ``N / 32`` words): a few elementwise passes that XLA
    fuses.
    """
    n = mask.shape[0]
    padded = -n % 32
    bits = jnp.pad(mask, (0, padded)).reshape(-1, 32).astype(jnp.uint32)
    shifts = jnp.arange(32, dtype=jnp.uint32)[None, :]
    words = (bits << shifts).sum(axis=1, dtype=jnp.uint32)
    per_word = jax.lax.population_count(words).astype(jnp.int32)
    before = jnp.cumsum(per_word) - per_word
    # Bits 0..j of each word: (2 << j) - 1, which wraps to all ones for j = 31.
    at_or_below = words[:, None] & ((jnp.uint32(2) << shifts) - jnp.uint32(1))
    within = jax.lax.population_count(at_or_below).astype(jnp.int32)
    return (before[:, None] + within).reshape(-1)[:n]


def compacted(mask: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Indices of the true entries of ``mask`` moved to the front.

    Returns:
        ``(order, count)``: int32 ``(N,)`` whose first ``count`` entries are the indices
        where ``mask`` is true, in increasing order, and ``N`` (out of bounds) after them;
        ``count`` int32 ``()``.
    """
    n = mask.shape[0]
    rank = inclusive_count(mask) - 1
    order = (
        jnp.full(n, n, jnp.int32)
        .at[jnp.where(mask, rank, n)]
        .set(jnp.arange(n, dtype=jnp.int32), mode="drop")
    )
    return order, mask.sum(dtype=jnp.int32)


def block_sizes(smallest: int, n: int) -> tuple[int, ...]:
    """Static block sizes ``smallest * 4**j`` below ``n``, then ``n`` itself."""
    sizes, size = [], max(1, min(smallest, n))
    while size < n:
        sizes.append(size)
        size *= 4
    return (*sizes, n)


def for_masked(mask: jax.Array, smallest_block: int, body: Any, carry: Any) -> Any:
    """Run ``body(carry, index)`` once on all the masked indices of this call.

    ``index`` is int32 ``(size,)``: the masked environment indices followed by the
    out-of-bounds ``N`` as padding (scatters with ``mode="drop"`` ignore it), where ``size``
    is the smallest of :func:`block_sizes` that holds them all. A ``lax.switch`` picks that
    size, so a call costs at most four times the work of the masked environments (or the
    smallest block), and nothing when none is masked.
    """
    n = mask.shape[0]
    order, count = compacted(mask)
    sizes = block_sizes(smallest_block, n)

    def branch(size: int) -> Any:
        return lambda carry: body(carry, order[:size])

    which = jnp.where(count == 0, 0, 1 + jnp.sum(count > jnp.asarray(sizes[:-1], jnp.int32)))
    return jax.lax.switch(which, [lambda carry: carry, *map(branch, sizes)], carry)


def _put(old: jax.Array, index: jax.Array, new: jax.Array) -> jax.Array:
    return old.at[index].set(new, mode="drop")


@dataclasses.dataclass(frozen=True)
class Compact(_Stateless):
    """Reset only the environments that need it, ``block_size`` at a time.

    The indices of the masked environments are compacted into a block of static size; only
    those are reset, and the results are scattered back. The block is ``block_size`` when
    that holds them all; when more finish at once, a larger static block (``block_size``
    times a power of 4, up to the batch) takes them all: none is left unreset and none gets a
    stale state. Nothing runs when none is masked.

    Attributes:
        block_size: The smallest block; a static size.
    """

    block_size: int
    name: ClassVar[str] = "compact"

    def apply(
        self, starts: Starts, state: Any, mask: jax.Array, obs: Any
    ) -> tuple[Any, PRNGKey, Any, Any]:
        """Returns ``(core, key, obs, strategy_state)`` with the masked environments reset."""
        n = mask.shape[0]

        def block(carry: tuple, index: jax.Array) -> tuple:
            core, keys, obs = carry
            safe = jnp.minimum(index, n - 1)
            next_keys, new_core, new_obs = starts.draw(keys[safe], safe)
            return (
                jax.tree.map(lambda old, new: _put(old, index, new), core, new_core),
                _put(keys, index, next_keys),
                jax.tree.map(lambda old, new: _put(old, index, new), obs, new_obs),
            )

        core, keys, obs = for_masked(mask, self.block_size, block, (state.core, state.key, obs))
        return core, keys, obs, state.resets


@pytree_dataclass
class ResetPool:
    """Fresh initial states drawn ahead of time (the ``pool`` strategy's state).

    A ring buffer of ``2 * refill_size`` states: the ``count`` states from ``start`` on (modulo
    the size) have not been handed out yet. Every state is handed out once.

    Attributes:
        core: Environment states, leading axis ``2 * refill_size``.
        obs: Their observations, same leading axis.
        start: int32, index of the next state to hand out.
        count: int32, how many states are left.
        key: The pool's own key; each refill splits it.
        params: The params the pooled states were drawn with; when the params passed to a
            step differ, the pool is emptied and refilled, so no state from old params is
            ever handed out.
    """

    core: Any
    obs: Any
    start: jax.Array
    count: jax.Array
    key: PRNGKey
    params: EnvParams


@dataclasses.dataclass(frozen=True)
class Pool:
    """Hand out initial states from a pool of precomputed fresh states, refilled in chunks.

    A refill draws ``refill_size`` states at once (one large batched reset, only on calls
    where the pool runs low) and writes them as one contiguous block; a step hands the next
    states, in order, to the environments that finished (their ranks among the finished come
    from a bit count; every environment's candidate is gathered and selected where done, a
    pass over the batch's states and observations like the select of ``every_step``, but
    without computing any reset). The cost of a reset is thus paid in efficient chunks. The
    pool's states come from its own key chain. Per-environment params are allowed unless a
    reset reads them (then use ``compact``).

    Attributes:
        refill_size: States drawn per refill; at least the number of environments, so that
            one refill covers a step where every environment finishes.
    """

    refill_size: int
    name: ClassVar[str] = "pool"
    fresh: ClassVar[bool] = True
    per_env_state: ClassVar[bool] = False

    @property
    def pool_size(self) -> int:
        """States the pool holds: two refills' worth."""
        return 2 * self.refill_size

    @staticmethod
    def check_params(starts: Starts) -> None:
        """Raise if a params leaf that resets read has one value per environment.

        A trace-time check. Per-environment leaves that only the dynamics read (domain
        randomization of physics) are fine: pooled states do not depend on them.
        """
        paths = starts.per_env_reset_params()
        if paths:
            raise ValueError(
                f"reset_strategy='pool' draws initial states ahead of time with one set of "
                f"params, but params{', params'.join(paths)} (read by reset_env or observe) "
                f"has one value per environment. Use reset_strategy='compact' or 'on_done' "
                f"for per-environment reset params."
            )

    def init(self, starts: Starts, key: PRNGKey, core: Any, num_envs: int) -> ResetPool:
        """A full pool of fresh states."""
        self.check_params(starts)
        starts = starts.shared()
        key, fill_key = jax.random.split(key)
        _, pool_core, pool_obs = starts.draw(jax.random.split(fill_key, self.pool_size))
        return ResetPool(
            core=pool_core,
            obs=pool_obs,
            start=jnp.zeros((), jnp.int32),
            count=jnp.full((), self.pool_size, jnp.int32),
            key=key,
            params=jax.tree.map(jnp.asarray, starts.params),
        )

    def _refill(self, starts: Starts, pool: ResetPool) -> ResetPool:
        key, fill_key = jax.random.split(pool.key)
        _, core, obs = starts.draw(jax.random.split(fill_key, self.refill_size))
        # Refills advance the write position by refill_size in a ring of twice that, so
        # it is 0 or refill_size: one contiguous block, never wrapping.
        at = (pool.start + pool.count) % self.pool_size

        def put(old: jax.Array, new: jax.Array) -> jax.Array:
            return jax.lax.dynamic_update_slice_in_dim(old, new, at, axis=0)

        return pool.replace(
            core=jax.tree.map(put, pool.core, core),
            obs=jax.tree.map(put, pool.obs, obs),
            count=pool.count + self.refill_size,
            key=key,
        )

    def apply(
        self, starts: Starts, state: Any, mask: jax.Array, obs: Any
    ) -> tuple[Any, PRNGKey, Any, Any]:
        """Returns ``(core, key, obs, strategy_state)`` with the masked environments reset."""
        self.check_params(starts)
        starts = starts.shared()
        pool: ResetPool = state.resets
        changed = jnp.zeros((), jnp.bool_)
        for old, new in zip(
            jax.tree.leaves(pool.params), jax.tree.leaves(starts.params), strict=True
        ):
            changed = changed | jnp.any(old != new)
        # Emptied, the ring keeps its alignment: the next refill writes where the next state
        # would have been read, so everything served from then on was drawn with the new params.
        pool = pool.replace(
            start=jnp.where(changed, (pool.start + pool.count) % self.pool_size, pool.start),
            count=jnp.where(changed, 0, pool.count),
            params=jax.tree.map(
                lambda new, old: jnp.asarray(new, old.dtype), starts.params, pool.params
            ),
        )
        needed = mask.sum(dtype=jnp.int32)
        pool = at_most_once(pool.count < needed, lambda p: self._refill(starts, p), pool)

        # The k-th finished environment (in index order) takes the pool's k-th state: a
        # gather of every environment's candidate and a select, elementwise passes that XLA
        # fuses (cheaper than compacting the finished ones into a block and scattering).
        # It runs on every step, finished or not: skipping it where nothing ends would add a
        # branch, which on an accelerator costs a device-to-host round trip on every step
        # (what the skip gained on the CPU: the Environments page, Training on Playground).
        slots = (pool.start + inclusive_count(mask) - 1) % self.pool_size
        core = select(mask, jax.tree.map(lambda src: src[slots], pool.core), state.core)
        obs = select(mask, jax.tree.map(lambda src: src[slots], pool.obs), obs)
        pool = pool.replace(start=(pool.start + needed) % self.pool_size, count=pool.count - needed)
        return core, state.key, obs, pool


@dataclasses.dataclass(frozen=True)
class Cached:
    """Brax's behaviour: return every environment to the first state it had. NOT fresh.

    Every episode of an environment starts from the same state, so per-episode randomness
    (procedural layouts, domain randomization) is lost. Only by explicit request.
    """

    name: ClassVar[str] = "cached"
    fresh: ClassVar[bool] = False
    per_env_state: ClassVar[bool] = True

    def init(self, starts: Starts, key: PRNGKey, core: Any, num_envs: int) -> Any:
        """The first state of every environment."""
        return core

    def apply(
        self, starts: Starts, state: Any, mask: jax.Array, obs: Any
    ) -> tuple[Any, PRNGKey, Any, Any]:
        """Returns ``(core, key, obs, strategy_state)`` with the masked environments reset."""
        first = state.resets
        axes = starts.axes if starts.per_env_params else None
        first_obs = jax.vmap(starts.env.observe, in_axes=(0, axes))(first, starts.params)
        return select(mask, first, state.core), state.key, select(mask, first_obs, obs), first


# ---------------------------------------------------------------------------- choice

ResetStrategy = EveryStep | OnDone | Compact | Pool | Cached

RESET_STRATEGIES: tuple[str, ...] = ("every_step", "on_done", "compact", "pool", "cached")
"""Names accepted by ``rollax.make(..., reset_strategy=...)``; all but ``cached`` are fresh."""


POOL_FROM_NUM_ENVS = 16
"""On the CPU, batches at least this large default to ``pool``; smaller ones (and single
environments) to ``on_done``."""


def default_reset_strategy(
    num_envs: int | None, costly_reset: bool = False, backend: str | None = None
) -> str:
    """The default strategy for ``num_envs`` environments on ``backend``.

    On the CPU: ``pool`` from 16 environments, ``on_done`` below. ``pool`` computes resets
    in large batched refills only when the pool runs low, which makes it the fastest fresh
    strategy from 16 environments up, on MuJoCo Playground's physics too; with fewer there
    is little to batch, and ``on_done`` is faster and compiles faster.

    On accelerators: a branch inside a jitted loop costs a device-to-host round trip per
    step, so the branching strategies lose to computing every reset and selecting
    (``every_step``), except for an environment whose reset costs many steps
    (``Environment.costly_reset``), which keeps ``pool``.

    The figures behind both choices are on the Environments page (Reset strategies, and
    Training on Playground).

    Args:
        num_envs: Batch size, ``None`` for one unbatched environment.
        costly_reset: The environment's ``costly_reset``.
        backend: ``"cpu"``, ``"gpu"``, ``"tpu"``...; ``None`` for JAX's default backend.
    """
    if backend is None:
        backend = jax.default_backend()
    if backend != "cpu":
        return "pool" if costly_reset and (num_envs or 1) >= POOL_FROM_NUM_ENVS else "every_step"
    return "on_done" if num_envs is None or num_envs < POOL_FROM_NUM_ENVS else "pool"


def default_block_size(num_envs: int, episode_length: int) -> int:
    """Default block of the ``compact`` strategy.

    About twice the expected number of environments finishing per step when episodes last
    ``episode_length`` steps, rounded up to a power of two, at least 1 and at most
    ``num_envs``. More finishing at once costs another block, not a stale state.
    """
    expected = 2.0 * num_envs / max(int(episode_length), 1)
    return int(min(num_envs, max(1, 2 ** math.ceil(math.log2(max(expected, 1.0))))))


def make_reset_strategy(
    name: str,
    num_envs: int,
    episode_length: int,
    block_size: int | None = None,
    refill_size: int | None = None,
) -> ResetStrategy:
    """Build a strategy by name with its static options checked.

    Args:
        name: One of :data:`RESET_STRATEGIES`.
        num_envs: Batch size (1 for a single environment).
        episode_length: Typical episode length, for the default ``block_size``.
        block_size: ``compact`` only: environments reset per block.
        refill_size: ``pool`` only: states drawn per refill; at least ``num_envs``.

    Raises:
        ValueError: unknown name, or an option that is invalid or does not apply.
    """
    if name not in RESET_STRATEGIES:
        raise ValueError(f"reset_strategy must be one of {RESET_STRATEGIES}, got {name!r}.")
    if block_size is not None and name != "compact":
        raise ValueError(
            f"block_size applies to reset_strategy='compact' only, got reset_strategy={name!r}."
        )
    if refill_size is not None and name != "pool":
        raise ValueError(
            f"refill_size applies to reset_strategy='pool' only, got reset_strategy={name!r}."
        )
    if name == "compact":
        if block_size is None:
            block_size = default_block_size(num_envs, episode_length)
        if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
            raise ValueError(f"block_size must be a positive integer, got {block_size!r}.")
        return Compact(min(block_size, num_envs))
    if name == "pool":
        if refill_size is None:
            refill_size = max(num_envs, 64)
        if (
            isinstance(refill_size, bool)
            or not isinstance(refill_size, int)
            or refill_size < num_envs
        ):
            raise ValueError(
                f"refill_size must be an integer >= num_envs ({num_envs}), so that one refill "
                f"always covers a step where every environment finishes; got {refill_size!r}."
            )
        return Pool(refill_size)
    return {"every_step": EveryStep, "on_done": OnDone, "cached": Cached}[name]()
