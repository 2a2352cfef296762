"""The XLA flags of the suite's processes: pytest's own and the ones its tests start.

The suite compiles with XLA's backend optimizations off (``SUITE_FLAGS``). Its programs are
small and run briefly, so compiling dominates its time, and what the tests check (shapes,
autoreset semantics, keys, bits within one program, learning to a stated return) does not
depend on how hard XLA optimizes. Measured on 2 cores: the same 42 tests took 268 s with
XLA's defaults and 204 s without the backend optimizations. A run that wants XLA's defaults
sets the level itself, e.g. ``XLA_FLAGS=--xla_backend_optimization_level=2 make test``.

Where the jaxlib still has them, it also compiles fusions with XLA:CPU's older emitters
(``IF_KNOWN_FLAGS``): on jaxlib 0.10.2 they took PPO's CartPole program from 7.0 to 4.2 s of
backend compile and its process from 16.3 to 11.4 CPU-seconds (medians of 7 and 3), while its
training ran as fast (Breakout-MinAtar and StatelessCartPole PPO, 131,072 steps x 3 seeds).
jaxlib 0.12 has only the new emitters, and XLA aborts the process on a flag it does not know,
so each such flag is tried once in a short process first (:func:`known_flags`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping

SUITE_FLAGS = ("--xla_backend_optimization_level=0",)
IF_KNOWN_FLAGS = ("--xla_cpu_use_fusion_emitters=false",)
"""Flags the suite sets where this jaxlib knows them (removed from jaxlib 0.12)."""
_DEVICE_COUNT = "--xla_force_host_platform_device_count"


def _without(flags: str, named_as: tuple[str, ...]) -> list[str]:
    """The entries of ``flags`` (an ``XLA_FLAGS`` value) whose names none of ``named_as`` has."""
    names = {flag.split("=", 1)[0] for flag in named_as}
    return [flag for flag in flags.split() if flag.split("=", 1)[0] not in names]


def with_flags(flags: str, *extra: str) -> str:
    """``flags`` (an ``XLA_FLAGS`` value) with each of ``extra`` in it, replacing an entry of
    the same name."""
    return " ".join([*_without(flags, extra), *extra])


def known_flags(flags: tuple[str, ...]) -> list[str]:
    """The entries of ``flags`` that this jaxlib accepts: each tried in a Python process that
    starts JAX's CPU backend with it (about 2 s each)."""
    probe = [sys.executable, "-c", "import jax; jax.devices('cpu')"]
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    return [
        flag
        for flag in flags
        if subprocess.run(probe, env={**env, "XLA_FLAGS": flag}, capture_output=True).returncode
        == 0
    ]


def use_suite_flags() -> None:
    """Put :data:`SUITE_FLAGS`, and those of :data:`IF_KNOWN_FLAGS` this jaxlib knows, into
    this process's ``XLA_FLAGS`` (before JAX starts its CPU backend), leaving an entry that is
    already set. pytest-xdist's workers and the processes tests start inherit the value, so
    only the first pytest process tries the flags."""
    flags = os.environ.get("XLA_FLAGS", "")
    named = {flag.split("=", 1)[0] for flag in flags.split()}

    def unset(wanted: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(f for f in wanted if f.split("=", 1)[0] not in named)

    extra = [*unset(SUITE_FLAGS), *known_flags(unset(IF_KNOWN_FLAGS))]
    os.environ["XLA_FLAGS"] = with_flags(flags, *extra)


def host_devices(env: Mapping[str, str], count: int) -> dict[str, str]:
    """``env`` for a process whose CPU is split into ``count`` JAX devices, keeping the
    suite's other flags."""
    flags = with_flags(env.get("XLA_FLAGS", ""), f"{_DEVICE_COUNT}={count}")
    return {**env, "XLA_FLAGS": flags}


def xla_defaults(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` for a process that compiles with XLA's backend optimizations on (without
    :data:`SUITE_FLAGS`; the older fusion emitters stay): for a script whose own training
    loop runs long enough that unoptimized code costs more than compiling saves (the
    single-file DQN and SAC examples ran twice as long under :data:`SUITE_FLAGS`)."""
    return {**env, "XLA_FLAGS": " ".join(_without(env.get("XLA_FLAGS", ""), SUITE_FLAGS))}
