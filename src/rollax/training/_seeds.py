"""Mapping a function over the seed axis of a training state."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rollax.training._layout import map_axis

__all__ = ["vmap_seeds"]


def vmap_seeds(
    fn: Callable[..., Any],
    num_seeds: int,
    in_axes: int | Sequence[int | None] | None = 0,
    out_axes: int = 0,
) -> Callable[..., Any]:
    """``jax.vmap(fn, in_axes, out_axes)`` over ``num_seeds`` seeds, without a batch of one.

    With one seed, ``fn`` runs on that seed's slice and the axis is put back on every output
    (see :func:`rollax.training.map_axis`): the same values, computed unbatched.

    Args:
        fn: The per-seed function.
        num_seeds: The size of the mapped axis.
        in_axes: As ``jax.vmap``'s: an int or ``None`` for every argument, or one per
            positional argument.
        out_axes: Where the seed axis goes on every output leaf.
    """

    def mapped(*args: Any) -> Any:
        axes = list(in_axes) if isinstance(in_axes, (tuple, list)) else [in_axes] * len(args)
        if len(axes) != len(args):
            raise ValueError(f"vmap_seeds: {len(axes)} in_axes for {len(args)} arguments.")
        return map_axis(fn, num_seeds, None, axes, out_axes)(*args)

    return mapped
