"""A multi-process run trained in a supervised child, so that a lost process ends in a message.

When a process of a multi-process run vanishes (killed, its host lost), JAX's coordination
service notices its missing heartbeats and ends every other process with an abort: a C++
fatal error (SIGABRT) that Python cannot catch. So ``rollax train`` and ``rollax resume``, in a
multi-process run, run the same command in a child process (marked by :data:`CHILD` in its
environment), pass SIGTERM and SIGINT on to it, copy its stderr through, and when it ends
abnormally print which process vanished (when JAX's messages say), the run's last complete
checkpoint and the commands that resume the run. A run of one process has no child.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["CHILD", "bind_to_supervisor", "is_supervised_child", "supervise"]

CHILD = "ROLLAX_SUPERVISOR_PID"
"""Set in the child's environment to the supervisor's process id."""

DELIBERATE = {0, 2, 3, 128 + signal.SIGINT, 128 + signal.SIGTERM}
"""Exit statuses the command gives on purpose: done, bad input, diverged, stopped by a signal
(after a checkpoint). Any other status, or death by a signal, is a failure."""

_TAIL = 1 << 16
"""Bytes of the child's stderr kept for finding which process vanished."""


def is_supervised_child() -> bool:
    """Whether this process is the training child of a ``rollax`` supervisor."""
    return CHILD in os.environ


def bind_to_supervisor() -> None:
    """Die with the supervisor: a SIGKILL to it then ends the training as well (Linux).

    Without this, killing the ``rollax`` process a user sees would leave its child training
    on, and the other processes would never learn that one was stopped.
    """
    supervisor = int(os.environ.get(CHILD, "0") or 0)
    if not sys.platform.startswith("linux") or os.getppid() != supervisor:
        return
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
    if os.getppid() != supervisor:  # the supervisor died before prctl took effect
        os.kill(os.getpid(), signal.SIGKILL)


def supervise(command: str, argv: list[str], cluster: Any, run_dir: str | Path) -> int:
    """Run ``rollax *argv`` as a child; its exit status, with a message if it failed.

    Args:
        command: ``"train"`` or ``"resume"``, for messages.
        argv: The child's arguments (this command's, the run directory made explicit).
        cluster: The :class:`~rollax.runs.Cluster` this process joins.
        run_dir: The run's directory, where the last complete checkpoint is looked up.
    """
    env = {**os.environ, CHILD: str(os.getpid())}
    with _stderr_channel() as (child_end, our_end):
        child = subprocess.Popen([sys.executable, "-m", "rollax", *argv], env=env, stderr=child_end)
        os.close(child_end)
        with _forwarding_signals(child) as forwarded:
            tail = _copy_through(our_end)
            code = child.wait()
    if code not in DELIBERATE and -code not in forwarded:
        print(failure_message(command, code, tail, cluster, Path(run_dir)), file=sys.stderr)
    return 128 - code if code < 0 else code  # a signal's status, as a shell gives it


@contextlib.contextmanager
def _stderr_channel() -> Iterator[tuple[int, int]]:
    """``(child's end, our end)`` of the child's stderr.

    A terminal where ours is one, so that the child shows its progress bar as it would
    alone; otherwise a pipe.
    """
    if os.name == "posix" and sys.stderr.isatty():
        import pty

        ours, childs = pty.openpty()
    else:
        ours, childs = os.pipe()
    try:
        yield childs, ours
    finally:
        os.close(ours)


@contextlib.contextmanager
def _forwarding_signals(child: subprocess.Popen) -> Iterator[set[int]]:
    """Pass SIGTERM and SIGINT on to ``child`` (which checkpoints and stops).

    Yields the set of signals passed on.
    """
    forwarded: set[int] = set()

    def forward(signum: int, frame: Any) -> None:
        forwarded.add(signum)
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signum)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield forwarded
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _copy_through(fd: int) -> str:
    """Copy what the child writes to ``fd`` to our stderr until it ends; the last of it."""
    out = getattr(sys.stderr, "buffer", None)
    tail = b""
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:  # a terminal's end once the child is gone (EIO)
            break
        if not chunk:
            break
        if out is not None:
            out.write(chunk)
            out.flush()
        else:  # a stderr replaced by text (a test's capture)
            sys.stderr.write(chunk.decode(errors="replace"))
        tail = (tail + chunk)[-_TAIL:]
    return tail.decode(errors="replace")


def vanished_process(stderr: str) -> int | None:
    """The process JAX's runtime reported lost in ``stderr``, or ``None`` if it names none.

    The coordination service (in process 0) names a task that stopped sending heartbeats; a
    process that lost the coordination service itself lost process 0, which hosts it.
    """
    for pattern in (r"Task (\d+) heartbeat timeout", r"stopped sending heartbeats\):\s*(\d+)"):
        found = re.search(pattern, stderr)
        if found:
            return int(found.group(1))
    if "Failed to send RPC to coordination service" in stderr:
        return 0
    return None


def failure_message(command: str, code: int, stderr: str, cluster: Any, run_dir: Path) -> str:
    """What failed, the last complete checkpoint, and the commands that resume the run."""
    how = f"was ended by {signal.Signals(-code).name}" if code < 0 else f"exited with {code}"
    lost = vanished_process(stderr)
    here = "this process" if cluster.from_environment else f"process {cluster.process_id}"
    if lost is not None and lost != cluster.process_id:
        what = (
            f"process {lost} of the run's {cluster.num_processes} vanished (killed, or its host "
            f"lost: JAX's coordination service lost touch with it), and {here} {how}."
        )
    else:
        what = f"the training of {here} {how}; see the messages above."
    lines = [f"rollax {command}: {what}"]
    steps = checkpoint_steps(run_dir)
    if steps is None:
        lines.append(f"The checkpoints in {run_dir} could not be read.")
    elif not steps:
        lines.append(f"{run_dir} holds no complete checkpoint yet: start the run again.")
    else:
        from rollax.runs import RunDirectory

        where = RunDirectory(run_dir).checkpoints / str(steps[-1])
        lines.append(f"Last complete checkpoint: step {steps[-1]} ({where}).")
        lines.append("Resume the run with every process, as it was started:")
        lines += [f"  {line}" for line in resume_commands(run_dir, cluster)]
    return "\n".join(lines)


def checkpoint_steps(run_dir: Path) -> list[int] | None:
    """The run's complete checkpoints (rollax's listing), or ``None`` if they can't be read."""
    import jax

    from rollax.checkpoints import Checkpointer
    from rollax.runs import RunDirectory

    previous = jax.config.jax_platforms
    jax.config.update("jax_platforms", "cpu")  # Orbax starts a backend: not the accelerator
    try:
        return Checkpointer(RunDirectory(run_dir).checkpoints).steps()
    except Exception:  # a message must come out whatever the directory holds
        return None
    finally:
        jax.config.update("jax_platforms", previous)


def resume_commands(run_dir: Path, cluster: Any) -> list[str]:
    """``rollax resume RUN_DIR`` with this run's cluster options.

    One line per process, or one line for every process where the cluster comes from the
    environment.
    """
    base = ["rollax", "resume", str(run_dir)]
    default = type(cluster)()
    if cluster.timeout != default.timeout:
        base += ["--coordinator-timeout", str(cluster.timeout)]
    if cluster.heartbeat_timeout != default.heartbeat_timeout:
        base += ["--heartbeat-timeout", str(cluster.heartbeat_timeout)]
    if cluster.from_environment:
        return [shlex.join([*base, "--cluster-from-env"])]
    options = ["--coordinator", cluster.coordinator, "--num-processes", str(cluster.num_processes)]
    return [
        shlex.join([*base, *options, "--process-id", str(i)]) for i in range(cluster.num_processes)
    ]
