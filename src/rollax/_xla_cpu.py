"""A workaround for an XLA:CPU deadlock, applied when rollax is imported.

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

__all__ = ["SCHEDULER_FLAG", "avoid_cpu_scheduler_deadlock"]

SCHEDULER_FLAG = "--xla_cpu_enable_concurrency_optimized_scheduler"


def avoid_cpu_scheduler_deadlock() -> None:
    """Turn XLA:CPU's concurrency-optimized scheduler off in ``XLA_FLAGS``, unless set."""
    flags = os.environ.get("XLA_FLAGS", "")
    if SCHEDULER_FLAG not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} {SCHEDULER_FLAG}=false".strip()


avoid_cpu_scheduler_deadlock()
