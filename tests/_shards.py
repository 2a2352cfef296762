"""Comparing the states of a driver's pieces and of the loop."""

from __future__ import annotations

import jax
import numpy as np


def assert_same_bits(got, want, **tolerance) -> None:
    """Every leaf equal (keys by their data); with ``tolerance``, close as ``assert_allclose``."""
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        if jax.dtypes.issubdtype(a.dtype, jax.dtypes.prng_key):
            a, b = jax.random.key_data(a), jax.random.key_data(b)
        if tolerance:
            np.testing.assert_allclose(a, b, **tolerance)
        else:
            np.testing.assert_array_equal(a, b)
