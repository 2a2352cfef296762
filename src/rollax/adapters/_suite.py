"""What the adapters of other JAX suites share: typed leaves and messages for unknown ids."""

from __future__ import annotations

import contextlib
import difflib
import warnings
from collections.abc import Iterable, Iterator
from typing import Any

import jax
import jax.numpy as jnp

from rollax.envs import Environment
from rollax.spaces import Space

__all__ = ["SuiteEnv", "strong", "suite_code", "unknown_id"]


def strong(tree: Any) -> Any:
    """``tree`` with every leaf a strongly typed array.

    The suites build states and params from Python numbers, which JAX types weakly; a weak
    leaf that a step makes strong changes the type signature of a state between two calls
    of a compiled program, which then compiles again (seen: the first chunk of PPO training
    after ``init`` on MinAtar compiled twice).
    """
    return jax.tree.map(lambda x: jnp.asarray(x, jnp.result_type(x)), tree)


def unknown_id(suite: str, prefix: str, env_id: str, known: Iterable[str]) -> ValueError:
    """A ``ValueError`` for an id ``suite`` does not have: the closest ids and all of them."""
    known = list(known)
    close = difflib.get_close_matches(env_id, known, n=5, cutoff=0.5)
    hint = f" Did you mean {', '.join(repr(prefix + c) for c in close)}?" if close else ""
    listing = ", ".join(known) if len(known) <= 30 else f"{len(known)} ids"
    return ValueError(f"Unknown {suite} environment {env_id!r}.{hint} rollax has {listing}.")


@contextlib.contextmanager
def suite_code() -> Iterator[None]:
    """Trace a suite's own code as its authors do: standard dtype promotion, any rank's.

    The suites rely on implicit promotion (rollax's tests run with ``strict`` dtypes and
    ``raise`` on rank promotion; MJX broadcasts a ``(3,)`` over a ``(3, 3)``), and some
    scatter a float into an int array (Jumanji's BinPack), which JAX warns about: that
    warning concerns the suite's code, not the user's, and is silenced here.
    """
    with (
        jax.numpy_dtype_promotion("standard"),
        jax.numpy_rank_promotion("allow"),
        warnings.catch_warnings(),
    ):
        warnings.filterwarnings(
            "ignore", message="scatter inputs have incompatible types", category=FutureWarning
        )
        yield


class SuiteEnv(Environment):
    """What every wrapped suite environment shares.

    Its id under the suite's prefix, and the spaces its constructor derived
    (``_observation_space``, ``_action_space``).
    """

    prefix: str = ""
    env_id: str
    _observation_space: Space
    _action_space: Space

    @property
    def name(self) -> str:
        """``<suite>/<id>``, the id ``rollax.make`` takes."""
        return self.prefix + self.env_id

    @property
    def observation_space(self) -> Space:
        """Space of one observation, converted from the suite's."""
        return self._observation_space

    @property
    def action_space(self) -> Space:
        """Space of one action, converted from the suite's."""
        return self._action_space
