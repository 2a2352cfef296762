"""Test-wide settings.

- JAX: strict dtype and rank promotion, so that implicit promotions in rollax code fail here
  instead of silently changing dtypes for users.
- Hypothesis: under CI (the ``CI`` environment variable set, as ``.ci/run`` is run), property
  tests draw their examples deterministically, so one commit always runs the same examples;
  local runs keep exploring with fresh ones. A failure found anywhere becomes an explicit
  ``@example`` on the test.
"""

import os

import jax
import pytest
from hypothesis import settings

import rollax

# Before the first computation: on a jaxlib whose CPU scheduler deadlocks (0.10), turn it off
# as the command line does (rollax.avoid_cpu_scheduler_deadlock; a no-op on later ones).
rollax.avoid_cpu_scheduler_deadlock()

jax.config.update("jax_numpy_dtype_promotion", "strict")
jax.config.update("jax_numpy_rank_promotion", "raise")

settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("dev", print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@pytest.fixture
def key() -> jax.Array:
    return jax.random.key(0)
