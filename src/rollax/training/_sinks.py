"""Where a run's metrics go: a CSV file and TensorBoard, one row per logging interval."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from rollax.training._run_dir import is_writer
from rollax.training._sweep import point_labels

__all__ = ["CsvSink", "MetricSink", "TensorBoardSink", "seed_return_fields"]


def seed_return_fields(num_seeds: int, sweep: Sequence[str] = ()) -> tuple[str, ...]:
    """The ``metrics.csv`` columns of each member's mean episode return, in member order.

    ``episode_return_seed0``, ``episode_return_seed1``, ...: the mean return of the episodes
    that seed ended in the interval, empty where it ended none. With one seed there are none
    (``episode_return`` is that seed's). With a sweep, every member has one, named by its
    grid point and seed: ``episode_return[learning_rate=1e-3 ent_coef=0]_seed0``, ...

    Args:
        num_seeds: Seeds per grid point (the config's ``num_seeds``).
        sweep: The config's ``sweep`` entries.
    """
    labels = point_labels(sweep)
    if labels:
        return tuple(f"episode_return[{p}]_seed{i}" for p in labels for i in range(num_seeds))
    return tuple(f"episode_return_seed{i}" for i in range(num_seeds)) if num_seeds > 1 else ()


class MetricSink(Protocol):
    """Receives one row of metrics per logging interval."""

    def write(self, step: int, row: dict[str, Any]) -> None:
        """Record ``row`` (values: numbers, or ``""`` for none) at environment step ``step``."""

    def close(self) -> None:
        """Flush and release the sink."""


class CsvSink:
    """Rows appended to a CSV file, flushed after each, so a kill loses at most one row.

    A file that exists already keeps its header: rows continue in its columns, so a run
    resumed by a version that logs more columns stays one readable table (a column it lacks
    is not written, a column the rows lack is left empty).

    Args:
        path: The file; a new one gets a header of ``fields``.
        fields: The columns, in order.
    """

    def __init__(self, path: Path, fields: Sequence[str]) -> None:
        self.fields = tuple(fields)
        self._file = None
        if not is_writer():
            return
        header = None
        if path.is_file():
            with path.open(newline="") as f:
                header = next(csv.reader(f), None)
        self._file = path.open("a", newline="")
        self._rows = csv.writer(self._file, lineterminator="\n")  # as truncate_metrics
        if header:
            self.fields = tuple(header)
        else:
            self._rows.writerow(self.fields)

    def write(self, step: int, row: dict[str, Any]) -> None:
        if self._file is not None:
            self._rows.writerow([row.get(k, "") for k in self.fields])
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class TensorBoardSink:
    """Scalars under ``train/<name>`` in TensorBoard event files.

    Args:
        path: The event files' directory.
        fields: The columns written (empty values are skipped).
        purge_step: On resume, TensorBoard drops what an earlier session logged past this.
    """

    def __init__(self, path: Path, fields: Sequence[str], purge_step: int | None) -> None:
        self.fields = tuple(fields)
        self._writer = None
        if is_writer():
            from tensorboardX import SummaryWriter

            self._writer = SummaryWriter(str(path), purge_step=purge_step)

    def write(self, step: int, row: dict[str, Any]) -> None:
        for name in self.fields:
            if row.get(name, "") != "":
                self.scalar(f"train/{name}", float(row[name]), step)

    def scalar(self, tag: str, value: float, step: int) -> None:
        """One scalar under its full tag (``"eval/deterministic_return"``)."""
        if self._writer is not None:
            self._writer.add_scalar(tag, value, step)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
