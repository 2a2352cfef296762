"""XLA:CPU flags: a deadlock's workaround, and the command line's CPU cores as devices.

The workaround is applied when rollax is imported.

XLA:CPU (jaxlib 0.10) can deadlock while it executes some programs with its
concurrency-optimized scheduler: every thread waits and nothing runs. Recurrent PPO over
several seeds hit it (an LSTM over 2 seeds on CartPole: the first rollout never returned),
while the same program compiled with the scheduler off runs, and off is as fast for the
programs measured (PPO on CartPole 173k steps/s against 170k, DQN 89k against 82k). Passing
the option per program (``jax.jit(..., compiler_options=...)``) does not avoid the deadlock,
so the flag goes into ``XLA_FLAGS``, which JAX reads when it starts its CPU backend: on the
first computation, not on ``import jax``. It has no effect on a backend already started, and
a value the user set is kept.
"""

from __future__ import annotations

import os

__all__ = [
    "DEVICE_COUNT_FLAG",
    "SCHEDULER_FLAG",
    "avoid_cpu_scheduler_deadlock",
    "cores_as_devices",
]

SCHEDULER_FLAG = "--xla_cpu_enable_concurrency_optimized_scheduler"
DEVICE_COUNT_FLAG = "--xla_force_host_platform_device_count"


def avoid_cpu_scheduler_deadlock() -> None:
    """Turn XLA:CPU's concurrency-optimized scheduler off in ``XLA_FLAGS``, unless set."""
    flags = os.environ.get("XLA_FLAGS", "")
    if SCHEDULER_FLAG not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} {SCHEDULER_FLAG}=false".strip()


avoid_cpu_scheduler_deadlock()


def cores_as_devices() -> int:
    """Make each usable CPU core a JAX CPU device in ``XLA_FLAGS``, unless a count is set.

    XLA:CPU runs one program on one device with little parallelism for the small operations
    of RL training, so several seeds in one program use about one core; seeds spread over
    one device per core run side by side (``devices="auto"``; measured on 2 cores: 8 seeds of
    DQN on CartPole 38k member steps/s against 17k, of PPO 403k against 210k). The command
    line calls this before JAX starts its backend (it has no effect on one already started);
    other platforms (GPUs) are unaffected.

    Returns:
        The device count set (or the one already in ``XLA_FLAGS``).
    """
    flags = os.environ.get("XLA_FLAGS", "")
    for flag in flags.split():
        if flag.startswith(DEVICE_COUNT_FLAG + "="):
            return int(flag.partition("=")[2])
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    os.environ["XLA_FLAGS"] = f"{flags} {DEVICE_COUNT_FLAG}={cores or 1}".strip()
    return cores or 1
