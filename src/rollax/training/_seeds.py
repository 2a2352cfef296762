"""Mapping a function over the seed axis of a training state."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax

__all__ = ["vmap_seeds"]


def vmap_seeds(
    fn: Callable[..., Any],
    num_seeds: int,
    in_axes: int | Sequence[int | None] | None = 0,
    out_axes: int = 0,
) -> Callable[..., Any]:
    """``jax.vmap(fn, in_axes, out_axes)`` over ``num_seeds`` seeds, without a batch of one.

    With several seeds this is ``jax.vmap``. With one, it calls ``fn`` on that seed's slice
    (``in_axes`` removed from each mapped argument) and puts the axis back on every output at
    ``out_axes``: the same values, but the matrix products stay unbatched, which XLA:CPU
    runs 10-15% faster than batched products with a batch of one (a 64x64 MLP's gradient
    step, minibatch 256: 119 us against 137 us).

    Args:
        fn: The per-seed function.
        num_seeds: The size of the mapped axis.
        in_axes: As ``jax.vmap``'s: an int or ``None`` for every argument, or one per
            positional argument.
        out_axes: Where the seed axis goes on every output leaf.
    """
    if num_seeds != 1:
        return jax.vmap(fn, in_axes=in_axes, out_axes=out_axes)

    def one_seed(*args: Any) -> Any:
        axes = in_axes if isinstance(in_axes, (tuple, list)) else (in_axes,) * len(args)
        if len(axes) != len(args):
            raise ValueError(f"vmap_seeds: {len(axes)} in_axes for {len(args)} arguments.")
        sliced = [
            arg
            if axis is None
            else jax.tree.map(lambda x, a=axis: jax.lax.index_in_dim(x, 0, a, False), arg)
            for arg, axis in zip(args, axes, strict=True)
        ]
        return jax.tree.map(lambda x: jax.lax.expand_dims(x, (out_axes,)), fn(*sliced))

    return one_seed
