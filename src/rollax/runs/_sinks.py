"""Where a run's metrics go: ``metrics.csv``, TensorBoard and the trackers, a row per interval.

``metrics.csv`` itself is the run directory's to write (``RunDirectory.open_metrics``); its
columns are named here, and :class:`RunSinks` writes each row to every sink in turn.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from rollax._files import wrote
from rollax.runs._run_dir import is_writer
from rollax.training import point_labels

if TYPE_CHECKING:
    from rollax.runs._run_state import Run

__all__ = [
    "COMMON_METRICS",
    "MetricSink",
    "RunSinks",
    "TensorBoardSink",
    "metric_fields",
    "point_rows",
    "seed_return_fields",
]


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


def _summary_writer_class() -> type:
    """The ``SummaryWriter`` of tensorboardX, imported without importing PyTorch.

    tensorboardX imports PyTorch, where it is installed, only to name ``torch.Tensor`` in its
    type hints (it converts a tensor it is given by importing PyTorch then). rollax logs
    floats, and importing PyTorch slows every ``rollax`` command's start-up (the Getting
    started page says by how much), so while tensorboardX is first imported, ``import torch``
    fails as if PyTorch were absent; PyTorch imports as usual afterwards. A process that has
    imported PyTorch already, or tensorboardX, imports tensorboardX as it is.
    """
    if "torch" in sys.modules or "tensorboardX" in sys.modules:
        from tensorboardX import SummaryWriter

        return SummaryWriter
    sys.modules["torch"] = None  # type: ignore[assignment]  # `import torch` raises ImportError
    try:
        from tensorboardX import SummaryWriter
    finally:
        del sys.modules["torch"]
    return SummaryWriter


class TensorBoardSink:
    """Scalars under ``train/<name>`` in TensorBoard event files, flushed after each row.

    Event files are only appended to, a new one per session; a kill can cut the last event
    short, which TensorBoard's reader skips.

    Args:
        path: The event files' directory.
        fields: The columns written (empty values are skipped).
        purge_step: TensorBoard hides what earlier sessions logged at this step or later
            (``None``: nothing is hidden).
    """

    def __init__(self, path: Path, fields: Sequence[str], purge_step: int | None) -> None:
        self.fields = tuple(fields)
        self._writer = None
        if is_writer():
            SummaryWriter = _summary_writer_class()
            self._writer = SummaryWriter(str(path), purge_step=purge_step)
            self._flush()

    def write(self, step: int, row: dict[str, Any]) -> None:
        values = {f"train/{k}": float(row[k]) for k in self.fields if row.get(k, "") != ""}
        self.scalars(values, step)

    def scalars(self, values: dict[str, float], step: int) -> None:
        """Scalars under their full tags (``{"eval/deterministic_return": 500.0}``)."""
        if self._writer is not None:
            for tag, value in values.items():
                self._writer.add_scalar(tag, value, step)
            self._flush()

    def _flush(self) -> None:
        """Write out what was added (TensorBoard then shows as much as ``metrics.csv``)."""
        self._writer.flush()
        wrote(Path(self._writer.logdir))

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None


COMMON_METRICS = (
    "env_steps",
    "updates",
    "wall_time",
    "steps_per_second",
    "episode_return",
    "episodes",
)
"""The columns of ``metrics.csv`` every agent has, before its own ``metric_names`` (and, with
several seeds, each seed's return as ``episode_return_seed0``, ``episode_return_seed1``, ...)."""


def metric_fields(run: Run) -> tuple[str, ...]:
    """The columns of the run's ``metrics.csv``."""
    members = seed_return_fields(run.config.num_seeds, run.config.sweep)
    return COMMON_METRICS + run.agent.metric_names + members


@dataclasses.dataclass
class RunSinks:
    """Where each chunk's metrics go: ``metrics.csv``, TensorBoard and the trackers."""

    csv: Any
    """``metrics.csv``, one row per chunk."""
    tensorboard: TensorBoardSink
    """The run's TensorBoard events (``tb/``)."""
    point_boards: list[TensorBoardSink]
    """A sweep's grid points' own TensorBoard runs (``tb/<point>/``); none without a sweep."""
    trackers: list = dataclasses.field(default_factory=list)
    """``--wandb``, ``--mlflow``: opened after the files, inside the loop's ``try``."""

    @classmethod
    def open(cls, run: Run) -> RunSinks:
        """Open ``metrics.csv``, then the TensorBoard runs (the trackers are opened later)."""
        directory = run.directory
        csv_sink = directory.open_metrics(metric_fields(run))
        scalars = COMMON_METRICS[3:] + run.agent.metric_names  # the seeds' returns stay in the CSV
        # Resumed: TensorBoard hides what an earlier session logged past the checkpoint (which
        # is logged again), as resume drops those rows of metrics.csv; a new run hides nothing.
        purge_step = run.env_steps + 1
        tensorboard = TensorBoardSink(directory.tensorboard, scalars, purge_step)
        # A sweep's grid points are TensorBoard runs of their own: tb/<point>/.
        point_boards = [
            TensorBoardSink(
                directory.point_tensorboard(label),
                ("episode_return", *run.agent.metric_names),
                purge_step,
            )
            for label in point_labels(run.config.sweep)
        ]
        return cls(csv_sink, tensorboard, point_boards)

    def write(self, run: Run, row: dict[str, Any], metrics: dict) -> None:
        """Write a chunk's row to each sink in turn, and each grid point's row to its board."""
        self.csv.write(run.env_steps, row)
        self.tensorboard.write(run.env_steps, row)
        for tracker in self.trackers:
            tracker.write(run.env_steps, row)
        for board, point_row in zip(self.point_boards, point_rows(run, metrics), strict=True):
            board.write(run.env_steps, point_row)

    def scalars(self, values: dict[str, float], step: int) -> None:
        """Log single values (the final evaluation's) to TensorBoard and the trackers."""
        self.tensorboard.scalars(values, step)
        for tracker in self.trackers:
            tracker.scalars(values, step)

    def close(self) -> None:
        """Close ``metrics.csv``, the TensorBoard runs, then the trackers."""
        self.csv.close()
        self.tensorboard.close()
        for board in self.point_boards:
            board.close()
        for tracker in self.trackers:
            tracker.close()


def point_rows(run: Run, metrics: dict) -> list[dict[str, Any]]:
    """One row per grid point of a sweep (none without): its seeds' mean return and metrics."""
    points = len(point_labels(run.config.sweep))
    if not points:
        return []

    def by_point(name: str) -> np.ndarray:
        return np.asarray(metrics[name]).reshape(points, -1)

    ended, returns = by_point("episodes"), by_point("episode_return")
    rows = []
    for p in range(points):
        done = ended[p] > 0
        row: dict[str, Any] = {
            "episode_return": f"{float(returns[p][done].mean()):.4f}" if done.any() else ""
        }
        for name in run.agent.metric_names:
            row[name] = f"{float(by_point(name)[p].mean()):.6g}"
        rows.append(row)
    return rows
