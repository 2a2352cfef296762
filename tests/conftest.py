"""Test-wide JAX settings: strict dtype and rank promotion, so that implicit promotions in
rollax code fail here instead of silently changing dtypes for users."""

import jax
import pytest

jax.config.update("jax_numpy_dtype_promotion", "strict")
jax.config.update("jax_numpy_rank_promotion", "raise")
# JAX's asynchronous dispatch on CPU can wait forever for a result of a program with nested
# loops and conditionals (jax-ml/jax#25861, reproduced here with jax 0.10.2 on training
# programs); synchronous dispatch avoids it and costs nothing measurable for these programs.
jax.config.update("jax_cpu_enable_async_dispatch", False)


@pytest.fixture
def key() -> jax.Array:
    return jax.random.key(0)
