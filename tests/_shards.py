"""One seed's state on one shard, as a driver's pieces take it, and comparing states."""

from __future__ import annotations

import jax
import numpy as np

from rollax.training import SEED, SHARD


def one_shard(state, layout):
    """The first seed's state on its first shard: the state's seed and shard axes taken away.

    ``layout`` is the agent's state layout (a prefix tree of tags).
    """
    cut = {SEED: lambda x: x[0], SHARD: lambda x: x[0, 0]}
    return jax.tree.map(
        lambda tag, part: jax.tree.map(cut[tag], part) if tag in cut else part, layout, state
    )


def assert_same_bits(got, want, **tolerance) -> None:
    """Every leaf equal (keys by their data); with ``tolerance``, close as ``assert_allclose``."""
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        if jax.dtypes.issubdtype(a.dtype, jax.dtypes.prng_key):
            a, b = jax.random.key_data(a), jax.random.key_data(b)
        if tolerance:
            np.testing.assert_allclose(a, b, **tolerance)
        else:
            np.testing.assert_array_equal(a, b)
