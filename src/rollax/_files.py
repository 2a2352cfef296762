"""Writing files so that a kill at any instant leaves each one whole or absent.

Every file of a run directory is written in one of two ways:

- replaced as a whole (``config.json``, ``curve.png``, ``eval.json``, a video, the header of
  ``metrics.csv``): :func:`write_atomic`, or another library's writer into
  :func:`temporary_path` followed by :func:`publish`. The data goes to a temporary file in
  the same directory, is synced to disk, and is renamed over the old file: a reader (or a
  run resumed after a kill or a power loss) sees the old file, the new one, or none, never
  part of one. A kill can leave the temporary file (``.NAME.tmp-PID.EXT``) behind.
- a new directory with its first files (a run directory with its ``config.json``):
  :func:`create_directory` writes them into a temporary directory beside it and renames
  that into place, so the directory appears with its files or not at all.
- appended (rows of ``metrics.csv``, TensorBoard events) or written by Orbax (checkpoints,
  finalized by a rename): each completed write is reported to :func:`wrote`.

Test only: with ``ROLLAX_TEST_KILL_AFTER_WRITES=N`` in its environment, a process reports
every completed write on stderr (``rollax: write 3: PATH``) and kills itself with SIGKILL
right after its ``N``-th (``0``: reports, never kills); ``SIGNAL:N`` (``SIGTERM:7``) sends
itself that signal instead, at a point as exact as a kill's. tests/test_kills.py kills a run
at every one of its writes this way and resumes it; tests/test_cli.py stops runs with
SIGTERM after their third row.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
from pathlib import Path

__all__ = [
    "KILL_AFTER_WRITES",
    "create_directory",
    "publish",
    "temporary_path",
    "write_atomic",
    "wrote",
]

KILL_AFTER_WRITES = "ROLLAX_TEST_KILL_AFTER_WRITES"
"""Test-only environment variable: SIGKILL this process right after its N-th write (``N``),
or send it another signal (``SIGTERM:N``)."""

_writes = 0
"""Writes this process completed (counted only under :data:`KILL_AFTER_WRITES`)."""


def wrote(path: Path) -> None:
    """Mark one completed write of ``path``; under the test variable, count it (and die)."""
    limit = os.environ.get(KILL_AFTER_WRITES)
    if limit is None:
        return
    global _writes
    _writes += 1
    print(f"rollax: write {_writes}: {path}", file=sys.stderr, flush=True)
    name, _, count = limit.rpartition(":")
    if _writes == int(count):
        os.kill(os.getpid(), signal.Signals[name or "SIGKILL"])


def temporary_path(path: Path) -> Path:
    """Where ``path`` is written before :func:`publish`: ``.NAME.tmp-PID.EXT`` beside it.

    The extension stays last, for writers that choose the format from it.
    """
    return path.with_name(f".{path.stem}.tmp-{os.getpid()}{path.suffix}")


def publish(tmp: Path, path: Path) -> None:
    """Sync the complete file ``tmp`` to disk and rename it over ``path`` (then sync that)."""
    with open(tmp, "rb") as f:
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _sync_directory(path.parent)
    wrote(path)


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` whole: through a temporary file, synced, and a rename."""
    tmp = temporary_path(path)
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _sync_directory(path.parent)
    wrote(path)


def create_directory(path: Path, files: dict[str, bytes]) -> None:
    """Create the directory ``path`` holding ``files`` (name to contents) in one step.

    The files are written and synced in ``.NAME.tmp-PID`` beside ``path``, which is then
    renamed to ``path``: a kill leaves ``path`` absent or whole. What a killed call left
    beside it (its process no longer running) is removed first. The parent directories are
    created as needed.

    Raises:
        FileExistsError: ``path`` exists already.
    """
    if path.exists():
        raise FileExistsError(f"{path} exists already.")
    path.parent.mkdir(parents=True, exist_ok=True)
    for stale in path.parent.glob(f".{path.name}.tmp-*"):
        if not _running(stale.name.rpartition("-")[2]):
            shutil.rmtree(stale, ignore_errors=True)
    staging = temporary_path(path)
    staging.mkdir()
    try:
        for name, data in files.items():
            with open(staging / name, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        _sync_directory(staging)
        os.rename(staging, path)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    _sync_directory(path.parent)
    for name in files:
        wrote(path / name)


def _running(pid: str) -> bool:
    """Whether the process ``pid`` (a string of digits) is running; ``False`` for a non-pid."""
    if not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _sync_directory(directory: Path) -> None:
    """Make a rename in ``directory`` durable (POSIX; elsewhere renames are left as they are)."""
    if os.name != "posix":
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
