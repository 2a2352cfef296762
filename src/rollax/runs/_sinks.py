"""Where a run's metrics go besides ``metrics.csv``: TensorBoard, one row per logging interval.

``metrics.csv`` itself is the run directory's to write (``RunDirectory.open_metrics``); the
columns of its members' returns are named here.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from rollax._files import wrote
from rollax.runs._run_dir import is_writer
from rollax.training import point_labels

__all__ = ["MetricSink", "TensorBoardSink", "seed_return_fields"]


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
