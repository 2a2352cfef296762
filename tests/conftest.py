"""Test-wide JAX settings: strict dtype and rank promotion, so that implicit promotions in
rollax code fail here instead of silently changing dtypes for users."""

import jax
import pytest

jax.config.update("jax_numpy_dtype_promotion", "strict")
jax.config.update("jax_numpy_rank_promotion", "raise")


@pytest.fixture
def key() -> jax.Array:
    return jax.random.key(0)
