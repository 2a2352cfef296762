"""What buffers store and return, and the checks every buffer applies to its input."""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rollax._struct import pytree_dataclass
from rollax.types import PyTree, TimeStep


@pytree_dataclass
class Transition:
    """One environment step as replay stores it.

    Shapes are for one environment; a batch adds leading axes.

    Attributes:
        obs: Observation the action was taken on (any pytree, e.g. a dict with uint8 images).
        action: The action taken.
        reward: float32 ``()``.
        terminated: bool ``()``: a terminal state was reached; do not bootstrap.
        truncated: bool ``()``: the episode was cut by a time limit; bootstrap from
            ``next_obs``.
        next_obs: The true successor of ``obs``: at an episode end the environment's
            ``final_obs``, never the first observation of the next episode.
        first: bool ``()``: ``obs`` opens an episode (a recurrent learner's carry starts
            fresh there); ``None`` when not kept.
        carry: A recurrent network's carry before this step, as it met ``obs`` (replay
            starts a sampled sequence from its first step's); ``None`` when not kept.
    """

    obs: Any
    action: Any
    reward: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    next_obs: Any
    first: Any = None
    carry: Any = None

    @classmethod
    def from_step(cls, obs: PyTree, action: PyTree, timestep: TimeStep) -> Transition:
        """The transition of a step: ``obs`` and ``action`` in, ``timestep`` out.

        ``next_obs`` is ``timestep.final_obs``, so a same-step reset does not hide the true
        successor.
        """
        return cls(
            obs=obs,
            action=action,
            reward=timestep.reward,
            terminated=timestep.terminated,
            truncated=timestep.truncated,
            next_obs=timestep.final_obs,
        )


@pytree_dataclass
class BufferSample:
    """A batch drawn from a transition or sequence buffer.

    Attributes:
        item: The stored items, each leaf ``(batch_size, ...)`` for a transition buffer and
            ``(batch_size, sequence_length, ...)`` for a sequence buffer.
        mask: bool ``(batch_size,)`` or ``(batch_size, sequence_length)``: True where the
            step is real data. Only ``episodes="mask"`` produces False entries (the steps
            after the first episode end of a sequence, whose data is zeroed).
        index: int32 ``(batch_size,)``: where each sample starts; pass it to
            ``update_priorities``.
        probability: float32 ``(batch_size,)``: the probability with which each sample was
            drawn.
        weight: float32 ``(batch_size,)``: importance weights ``(N * probability) ** -beta``
            divided by their batch maximum; all ones for uniform sampling.
    """

    item: PyTree
    mask: jax.Array
    index: jax.Array
    probability: jax.Array
    weight: jax.Array


def check_positive_int(name: str, value: Any, minimum: int = 1) -> int:
    """``value`` as an int, or a TypeError/ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        hint = f"; write {name}=int({value!r})" if isinstance(value, float) else ""
        raise TypeError(f"{name} must be an int, got {value!r} ({type(value).__name__}){hint}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    return operator.index(value)


def multiples_near(value: int, unit: int) -> str:
    """The multiples of ``unit`` just below and above ``value``, for error messages."""
    below = (value // unit) * unit
    above = below + unit
    return f"{below:,} or {above:,}" if below > 0 else f"{above:,}"


def example_spec(example_item: PyTree) -> PyTree:
    """``jax.ShapeDtypeStruct`` leaves of one example item (no batch axes)."""
    leaves = jax.tree.leaves(example_item)
    if not leaves:
        raise ValueError("example_item must contain at least one array, got an empty pytree")

    def spec(leaf: Any) -> jax.ShapeDtypeStruct:
        arr = jnp.asarray(leaf) if not hasattr(leaf, "dtype") else leaf
        return jax.ShapeDtypeStruct(np.shape(arr), arr.dtype)

    return jax.tree.map(spec, example_item)


def check_item(
    item: PyTree, spec: PyTree, patterns: tuple[tuple[int | None, ...], ...], name: str = "item"
) -> tuple[PyTree, tuple[int, ...]]:
    """Check ``item`` against ``spec`` with leading axes matching one of ``patterns``.

    A pattern is a tuple of leading sizes, ``None`` matching any size; every leaf must have
    the same leading axes. Returns the item with every leaf cast to the stored dtype (only
    same-kind casts, such as float64 to float32) and the leading shape that matched. Raises a
    ValueError naming the first leaf whose structure or shape differs, or a TypeError for a
    dtype that cannot be cast. Runs on shapes only, so it costs nothing under ``jit``.
    """
    spec_def = jax.tree.structure(spec)
    item_def = jax.tree.structure(item)
    if item_def != spec_def:
        raise ValueError(
            f"{name} has structure {item_def}, but the buffer was initialised with {spec_def}"
        )
    paths = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_leaves_with_path(spec)]
    spec_leaves = jax.tree.leaves(spec)
    item_leaves = jax.tree.leaves(item)
    shapes = [tuple(np.shape(x)) for x in item_leaves]
    wanted = " or ".join(_pattern_str(p) for p in patterns)
    matched = None
    for pattern in patterns:
        nb = len(pattern)
        if all(
            _fits(shape, (*pattern, *s.shape)) for shape, s in zip(shapes, spec_leaves, strict=True)
        ):
            leading = {shape[:nb] for shape in shapes}
            if len(leading) == 1:
                matched = leading.pop()
                break
            raise ValueError(
                f"the leaves of {name} disagree on their leading axes {sorted(leading)}; "
                f"expected {wanted}"
            )
    if matched is None:
        for path, shape, s in zip(paths, shapes, spec_leaves, strict=True):
            if not any(_fits(shape, (*p, *s.shape)) for p in patterns):
                raise ValueError(
                    f"{name}{path} has shape {shape}; expected leading axes {wanted} followed by "
                    f"the example item's shape {s.shape}"
                )
        raise ValueError(f"the leaves of {name} disagree on their leading axes; expected {wanted}")
    cast = []
    for path, x, s in zip(paths, item_leaves, spec_leaves, strict=True):
        dtype = jnp.result_type(x)
        if dtype != s.dtype and not jnp.can_cast(dtype, s.dtype, casting="same_kind"):
            raise TypeError(
                f"{name}{path} has dtype {dtype}, which cannot be stored as {s.dtype} "
                "(the example item's dtype); convert it explicitly"
            )
        cast.append(jnp.asarray(x, s.dtype))
    return jax.tree.unflatten(spec_def, cast), matched


def _pattern_str(pattern: tuple[int | None, ...]) -> str:
    names = ["num_steps" if p is None else str(p) for p in pattern]
    return "(" + ", ".join(names) + ("," if len(names) == 1 else "") + ")"


def _fits(shape: tuple[int, ...], want: tuple[int | None, ...]) -> bool:
    """Whether ``shape`` matches ``want``, where ``None`` entries match any size."""
    if len(shape) != len(want):
        return False
    return all(w is None or s == w for s, w in zip(shape, want, strict=True))


def done_of(item: PyTree) -> jax.Array:
    """``terminated | truncated`` of an item (a Transition, dataclass or mapping)."""
    return _flag(item, "terminated") | _flag(item, "truncated")


def _flag(item: PyTree, name: str) -> jax.Array:
    value = item[name] if isinstance(item, Mapping) else getattr(item, name)
    return jnp.asarray(value, bool)


def has_flags(item: PyTree) -> bool:
    """Whether ``item`` carries ``terminated`` and ``truncated`` entries."""
    if isinstance(item, Mapping):
        return "terminated" in item and "truncated" in item
    return hasattr(item, "terminated") and hasattr(item, "truncated")
