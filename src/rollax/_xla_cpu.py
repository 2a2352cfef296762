"""XLA:CPU flags that rollax's command line sets: a deadlock's workaround, and cores as devices.

Importing rollax sets nothing: both flags go into ``XLA_FLAGS`` only when the command line
runs, or when a program calls :func:`avoid_cpu_scheduler_deadlock` or
:func:`cores_as_devices` itself. JAX reads ``XLA_FLAGS`` when it starts its CPU backend, on
the first computation, so either call has an effect only before that; a value the user set
is kept. Other platforms (GPUs, TPUs) ignore both flags.
"""

from __future__ import annotations

import importlib.metadata
import os

__all__ = [
    "DEVICE_COUNT_FLAG",
    "SCHEDULER_FLAG",
    "avoid_cpu_scheduler_deadlock",
    "cores_as_devices",
    "flags_set",
    "scheduler_deadlocks",
]

SCHEDULER_FLAG = "--xla_cpu_enable_concurrency_optimized_scheduler"
DEVICE_COUNT_FLAG = "--xla_force_host_platform_device_count"

# The first jaxlib release on which the deadlock below was not seen.
_FIRST_JAXLIB_WITHOUT_DEADLOCK = (0, 11)

_set: list[str] = []


def flags_set() -> list[str]:
    """The ``XLA_FLAGS`` entries this process's rollax added (``rollax info`` prints them)."""
    return list(_set)


def _add_flag(flag: str) -> None:
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {flag}".strip()
    _set.append(flag)


def _jaxlib_version() -> tuple[int, ...]:
    version = importlib.metadata.version("jaxlib")
    return tuple(int(part) for part in version.split(".")[:2] if part.isdigit())


def scheduler_deadlocks() -> bool:
    """Whether the installed jaxlib is one whose CPU scheduler deadlocked rollax's programs.

    jaxlib 0.10's XLA:CPU could deadlock while it executed some programs with its
    concurrency-optimized scheduler: every thread waited and nothing ran. Recurrent PPO over
    two seeds on CartPole (an LSTM) hung on jaxlib 0.10.2 with the scheduler on, and not on
    0.11 or 0.12 (the Getting started page counts the runs).
    """
    return _jaxlib_version() < _FIRST_JAXLIB_WITHOUT_DEADLOCK


def avoid_cpu_scheduler_deadlock() -> bool:
    """Turn XLA:CPU's concurrency-optimized scheduler off where it deadlocks (jaxlib 0.10).

    Call it before the first computation (JAX then starts its backend with the flag). The
    command line calls it for you. PPO and DQN run as fast with the scheduler off (see the
    Getting started page). Passing the option per program (``jax.jit``'s
    ``compiler_options``) does not avoid the deadlock, hence the environment variable.

    Returns:
        True if it added the flag to ``XLA_FLAGS``; False where the installed jaxlib does
        not need it or ``XLA_FLAGS`` already sets the scheduler either way.
    """
    if not scheduler_deadlocks() or SCHEDULER_FLAG in os.environ.get("XLA_FLAGS", ""):
        return False
    _add_flag(f"{SCHEDULER_FLAG}=false")
    return True


def cores_as_devices() -> int:
    """Make each usable CPU core a JAX CPU device in ``XLA_FLAGS``, unless a count is set.

    XLA:CPU runs one program on one device with little parallelism for the small operations
    of RL training, so several seeds in one program use about one core; seeds spread over
    one device per core run side by side (``devices="auto"``; the Seeds, shards and devices
    page has the figures). The command line calls this before JAX starts its backend (it
    has no effect on one already started); other platforms (GPUs) are unaffected.

    Returns:
        The device count set (or the one already in ``XLA_FLAGS``).
    """
    for flag in os.environ.get("XLA_FLAGS", "").split():
        if flag.startswith(DEVICE_COUNT_FLAG + "="):
            return int(flag.partition("=")[2])
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    _add_flag(f"{DEVICE_COUNT_FLAG}={cores or 1}")
    return cores or 1
