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
    (``init``, evaluation), and for training programs at a level that runs them as fast
    (DQN, SAC, TD3).
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
    """XLA options for programs that run rarely: a lower LLVM optimization level on CPU.

    Measured on a 2-core CPU with CartPole's PPO: ``init`` (run once) compiles in 1.3 s at
    level 0 instead of 2.9 s; evaluation compiles in 1.0 s at level 1 instead of 1.5 s and
    runs as fast. The training program keeps the default (level 1 was up to 5% slower at
    256 environments). Other backends keep their defaults.
    """
    if jax.default_backend() != "cpu":
        return None
    return {"xla_backend_optimization_level": cpu_level}
