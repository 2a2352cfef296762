"""Compiling: lighter XLA options, and a count of what compiles.

:class:`FastCompile` is a jitted program that compiles with lighter XLA options when called at
the top level; :func:`compile_events` counts the programs compiled meanwhile.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import functools
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import jax

__all__ = ["CompileEvents", "FastCompile", "compile_events", "compile_side_by_side"]

BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"
"""``jax.monitoring``'s event for each program XLA compiles (or reads from the persistent
compilation cache: a cache hit still counts as a compile)."""
CACHE_HIT = "/jax/compilation_cache/cache_hits"
"""``jax.monitoring``'s event for each program read from the persistent compilation cache."""


@dataclasses.dataclass
class CompileEvents:
    """What compiled while :func:`compile_events` listened."""

    programs: list[str] = dataclasses.field(default_factory=list)
    """The name of each program compiled (``"jit(run_iterations)"``), in order; a program
    read from the persistent cache included."""
    seconds: float = 0.0
    """Seconds of XLA compiling, summed over the programs (overlapping ones each count)."""
    cached: list[str] = dataclasses.field(default_factory=list)
    """The names of the programs read from the persistent compilation cache (a subset of
    ``programs``)."""

    @property
    def cache_hits(self) -> int:
        """How many programs were read from the persistent compilation cache."""
        return len(self.cached)


@contextlib.contextmanager
def compile_events() -> Iterator[CompileEvents]:
    """Count the programs compiled (by any thread) inside the ``with`` block.

    JAX reports a cache hit, then the compile it ends, on the compiling thread: a hit is the
    next compile's of its thread.
    """
    events = CompileEvents()
    hit = threading.local()

    def on_duration(event: str, seconds: float, fun_name: str = "", **kwargs: Any) -> None:
        if event == BACKEND_COMPILE:
            events.programs.append(fun_name)
            events.seconds += seconds
            if getattr(hit, "pending", False):
                events.cached.append(fun_name)
                hit.pending = False

    def on_event(event: str, **kwargs: Any) -> None:
        if event == CACHE_HIT:
            hit.pending = True

    jax.monitoring.register_event_duration_secs_listener(on_duration)
    jax.monitoring.register_event_listener(on_event)
    try:
        yield events
    finally:
        jax.monitoring.unregister_event_duration_listener(on_duration)
        jax.monitoring.unregister_event_listener(on_event)


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


def compile_side_by_side(
    jobs: Sequence[Callable[[], Any]], compiling: Callable[[int], Any] | None = None
) -> int:
    """Run ``jobs`` (each compiles one program) on one thread each; their number.

    Tracing takes turns on Python's lock, but XLA compiles without it, so on a multi-core
    machine the compilations overlap. ``compiling(n)`` is called first with their number (a
    progress display); ``None``: nothing.
    """
    if compiling is not None:
        compiling(len(jobs))
    with concurrent.futures.ThreadPoolExecutor(max(len(jobs), 1)) as pool:
        for future in [pool.submit(job) for job in jobs]:
            future.result()
    return len(jobs)
