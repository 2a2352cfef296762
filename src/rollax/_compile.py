"""Jitted programs that compile with lighter XLA options when called at the top level."""

from __future__ import annotations

import functools
from typing import Any

import jax

__all__ = ["FastCompile"]


class FastCompile:
    """A jitted function compiled with lighter XLA options when called at the top level.

    JAX accepts ``compiler_options`` only on an outermost ``jit``. Called with a traced
    argument (inside ``jit``, ``vmap``, ``grad``, ``eval_shape``), this calls the plain jitted
    function instead: composable like any jitted function, and quicker to compile when
    called directly. Called inside a transformation with concrete arguments only (values
    closed over by the outer function), JAX refuses the options with a ``ValueError`` while
    tracing, before anything runs, and the plain function is traced instead; an error of the
    function itself is raised again by that second trace. Used for programs that run rarely
    (``init``, evaluation), and for the on- and off-policy drivers' training programs, at a
    level that runs them as fast.
    """

    def __init__(self, fn: Any, cpu_level: int) -> None:
        functools.update_wrapper(self, fn)
        self._plain = jax.jit(fn)
        options = _compiler_options(cpu_level)
        self._fast = jax.jit(fn, compiler_options=options) if options else self._plain

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._fast is self._plain or any(
            isinstance(x, jax.core.Tracer) for x in jax.tree.leaves((args, kwargs))
        ):
            return self._plain(*args, **kwargs)
        try:
            return self._fast(*args, **kwargs)
        except ValueError:
            return self._plain(*args, **kwargs)

    def lower(self, *args: Any) -> Any:
        """The top-level program, lowered (as ``jax.jit(...).lower``)."""
        return self._fast.lower(*args)


def _compiler_options(cpu_level: int) -> dict[str, Any] | None:
    """XLA options on CPU: a lower LLVM optimization level, which compiles faster.

    ``init`` (run once) compiles at level 0; evaluation and both drivers' training programs
    at level 1, which runs them as fast (see the Getting started page). Other backends keep
    their defaults.
    """
    if jax.default_backend() != "cpu":
        return None
    return {"xla_backend_optimization_level": cpu_level}
