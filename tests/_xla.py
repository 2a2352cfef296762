"""The XLA flags of the suite's processes: pytest's own and the ones its tests start.

The suite compiles with XLA's backend optimizations off (``SUITE_FLAGS``). Its programs are
small and run briefly, so compiling dominates its time, and what the tests check (shapes,
autoreset semantics, keys, bits within one program, learning to a stated return) does not
depend on how hard XLA optimizes. Measured on 2 cores: the same 42 tests took 268 s with
XLA's defaults and 204 s without the backend optimizations. A run that wants XLA's defaults
sets the level itself, e.g. ``XLA_FLAGS=--xla_backend_optimization_level=2 make test``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

SUITE_FLAGS = ("--xla_backend_optimization_level=0",)
_DEVICE_COUNT = "--xla_force_host_platform_device_count"


def _without(flags: str, named_as: tuple[str, ...]) -> list[str]:
    """The entries of ``flags`` (an ``XLA_FLAGS`` value) whose names none of ``named_as`` has."""
    names = {flag.split("=", 1)[0] for flag in named_as}
    return [flag for flag in flags.split() if flag.split("=", 1)[0] not in names]


def with_flags(flags: str, *extra: str) -> str:
    """``flags`` (an ``XLA_FLAGS`` value) with each of ``extra`` in it, replacing an entry of
    the same name."""
    return " ".join([*_without(flags, extra), *extra])


def use_suite_flags() -> None:
    """Put :data:`SUITE_FLAGS` into this process's ``XLA_FLAGS`` (before JAX starts its CPU
    backend), leaving a level that is already set."""
    flags = os.environ.get("XLA_FLAGS", "")
    extra = [f for f in SUITE_FLAGS if f.split("=", 1)[0] not in flags]
    os.environ["XLA_FLAGS"] = with_flags(flags, *extra)


def host_devices(env: Mapping[str, str], count: int) -> dict[str, str]:
    """``env`` for a process whose CPU is split into ``count`` JAX devices, keeping the
    suite's other flags."""
    flags = with_flags(env.get("XLA_FLAGS", ""), f"{_DEVICE_COUNT}={count}")
    return {**env, "XLA_FLAGS": flags}


def xla_defaults(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` for a process that compiles with XLA's defaults: for a script whose own
    training loop runs long enough that unoptimized code costs more than compiling saves (the
    single-file DQN and SAC examples ran twice as long under :data:`SUITE_FLAGS`)."""
    return {**env, "XLA_FLAGS": " ".join(_without(env.get("XLA_FLAGS", ""), SUITE_FLAGS))}
