"""Frozen dataclasses that are JAX pytrees.

Every state and parameter struct in rollax is one of these: named fields instead of
positional tuples, immutable, and usable as an argument of ``jit``/``vmap``/``scan``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

import jax

T = TypeVar("T")


def static_field(**kwargs: Any) -> Any:
    """A dataclass field that is part of the pytree structure, not a leaf.

    Changing a static field changes the tree structure, so a jitted function that takes
    the struct compiles again. Use it for shapes and counts, never for values that vary
    between calls.
    """
    metadata = dict(kwargs.pop("metadata", {}) or {})
    metadata["static"] = True
    return dataclasses.field(metadata=metadata, **kwargs)


def pytree_dataclass(cls: type[T]) -> type[T]:
    """Make ``cls`` a frozen dataclass registered as a JAX pytree.

    Fields declared with :func:`static_field` are auxiliary data; all others are leaves.
    The class gains a ``replace(**changes)`` method that returns a modified copy.
    """
    cls = dataclasses.dataclass(frozen=True)(cls)
    if not hasattr(cls, "replace"):
        cls.replace = dataclasses.replace  # type: ignore[attr-defined]
    return jax.tree_util.register_dataclass(cls)
