"""Several processes, on one machine or many, as one run: ``jax.distributed``.

Every process runs the same program on its own devices; the mesh spans all of them, so each
process steps the environments of the shards its devices hold. Only process 0 writes run
files; every process takes part in each checkpoint. A stop requested in any process (a
SIGTERM to one of them) is agreed on by all through a collective after each chunk of
training, so they stop at the same step and save one complete checkpoint together.

A process that vanishes (killed, its host lost) stops sending heartbeats to the coordination
service; after ``Cluster.heartbeat_timeout`` seconds JAX's runtime ends every other process
with an abort (a C++ fatal error, which Python cannot catch: ``rollax train`` runs a
multi-process run in a supervised child, see :mod:`rollax._supervisor`).
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import socket
import time
from typing import Any

import jax
import numpy as np

__all__ = ["Cluster", "agree_any"]


@dataclasses.dataclass(frozen=True)
class Cluster:
    """How this process joins a multi-process run (``--coordinator`` and friends).

    Attributes:
        coordinator: ``HOST:PORT`` of process 0's coordination service; empty for one
            process, or with ``from_environment``.
        num_processes: Processes in the run.
        process_id: This process's index, ``0 <= process_id < num_processes``.
        from_environment: Let ``jax.distributed.initialize`` read the cluster from the
            environment (Slurm's or Open MPI's variables) instead.
        timeout: Seconds to wait for every process to reach the coordinator.
        heartbeat_timeout: Seconds without a heartbeat after which the coordination service
            declares a process lost and the others stop (JAX's default is 100).
    """

    coordinator: str = ""
    num_processes: int = 1
    process_id: int = 0
    from_environment: bool = False
    timeout: int = 300
    heartbeat_timeout: int = 30

    @property
    def distributed(self) -> bool:
        """Whether this is a multi-process run (or one read from the environment)."""
        return self.from_environment or self.num_processes > 1 or bool(self.coordinator)

    def validate(self) -> None:
        """Raise a ``ValueError`` naming the first bad setting and what would be valid."""
        for name in ("num_processes", "timeout", "heartbeat_timeout"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                flag = "--" + name.replace("_", "-")
                raise ValueError(f"{flag} must be a positive integer, got {value!r}.")
        pid = self.process_id
        if isinstance(pid, bool) or not isinstance(pid, int) or not 0 <= pid < self.num_processes:
            raise ValueError(
                f"--process-id must lie in [0, {self.num_processes}) for --num-processes "
                f"{self.num_processes}, got {pid!r}."
            )
        if self.from_environment:
            return
        if self.num_processes > 1 and not re.fullmatch(r"[^\s:]+:\d{1,5}", self.coordinator):
            raise ValueError(
                f"--coordinator must be HOST:PORT (process 0's address) for a run of "
                f"{self.num_processes} processes, got {self.coordinator!r}."
            )

    def join(self) -> None:
        """Initialize ``jax.distributed`` (before anything else uses JAX), if distributed.

        Raises:
            ValueError: bad settings, or a coordinator that could not be reached in time.
        """
        self.validate()
        if not self.distributed:
            return
        if not self.from_environment and self.process_id != 0:
            # XLA ends the process (no exception) when the coordinator is not there: look
            # for it first, so that the answer is a message.
            self._wait_for_coordinator()
        # Processes on CPU talk through gloo (the default is none: one process only).
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        options = _accepted(
            jax.distributed.initialize,
            initialization_timeout=self.timeout,
            heartbeat_timeout_seconds=self.heartbeat_timeout,
        )
        if not self.from_environment:
            options.update(
                coordinator_address=self.coordinator,
                num_processes=self.num_processes,
                process_id=self.process_id,
            )
        try:
            jax.distributed.initialize(**options)
        except Exception as e:  # XLA raises its own runtime errors
            where = "the cluster in the environment" if self.from_environment else self.coordinator
            raise ValueError(
                f"Could not join the run's {self.num_processes} processes through {where} "
                f"within {self.timeout} s ({type(e).__name__}: {str(e)[:300]}). Start every "
                f"process with the same --coordinator (process 0's HOST:PORT, reachable from "
                f"all) and --num-processes, each with its own --process-id."
            ) from e

    def _wait_for_coordinator(self) -> None:
        host, port = self.coordinator.rsplit(":", 1)
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                with socket.create_connection((host, int(port)), timeout=5):
                    return
            except OSError as e:
                if time.monotonic() >= deadline:
                    raise ValueError(
                        f"Could not join the run's {self.num_processes} processes: no "
                        f"coordinator answered at {self.coordinator} within {self.timeout} s "
                        f"({e}). Start process 0 with the same --coordinator (its own "
                        f"HOST:PORT, reachable from every process)."
                    ) from e
                time.sleep(0.5)


def _accepted(function: Any, **options: Any) -> dict[str, Any]:
    """The ``options`` that ``function`` takes (a JAX release may lack one)."""
    parameters = inspect.signature(function).parameters
    return {name: value for name, value in options.items() if name in parameters}


def agree_any(flag: bool) -> bool:
    """Whether ``flag`` holds in any process (a collective: every process must call it)."""
    if jax.process_count() == 1:
        return bool(flag)
    from jax.experimental import multihost_utils

    flags = multihost_utils.process_allgather(np.asarray([flag], np.int32))
    return bool(np.asarray(flags).any())
