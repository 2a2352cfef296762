"""A run directory on disk, and writing into it without ever leaving a half-written file.

A run directory holds everything about one run::

    RUN_DIR/
      config.json      the algorithm, environment, its config and the RunConfig (what resume reads)
      metrics.csv      one row per logging interval
      tb/              TensorBoard event files
      curve.png        the learning curve, redrawn at every checkpoint
      checkpoints/     Orbax checkpoints, one directory per environment step
      eval.json        returns of the final policy (after the budget is spent)
      trackers.json    with --wandb or --mlflow: each tracker's run id and the last step sent
      wandb/           with --wandb: W&B's own files (unless WANDB_DIR says elsewhere)
      population.jsonl with --pbt-interval: the population's history, one event a line
      population.png   with --pbt-interval: the members' schedules, redrawn at checkpoints

:class:`RunDirectory` is the one place that knows these names and formats: the rest of
rollax asks it for a file's location or its content.

A kill at any instant leaves every file whole or absent (see :mod:`rollax._files`): the
directory appears with its ``config.json`` in one rename, so a run directory always holds a
run that ``resume`` continues; JSON and PNG files and the header of ``metrics.csv`` are
written to a temporary file, synced and renamed; ``metrics.csv`` rows and
``population.jsonl`` events are only appended, each flushed, so a kill can cut short the
last one, which every reader leaves out and resume drops (with the rows and events past the
checkpoint it continues from). Resume also removes the
temporary files a kill left. With several JAX processes only process 0 writes.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax

from rollax import _files

__all__ = [
    "HISTORY",
    "MetricsFile",
    "RunDirectory",
    "csv_line",
    "is_writer",
    "read_history",
    "read_metrics",
    "write_atomic",
]

HISTORY = "population.jsonl"
"""The population's history in a run directory: one JSON object per line, the first the
members' starting values (``"event": "start"``), then one per exploit-and-explore step."""


def is_writer() -> bool:
    """Whether this process writes run files (process 0 of a multi-process run)."""
    return jax.process_index() == 0


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` whole (:func:`rollax._files.write_atomic`), on process 0."""
    if is_writer():
        _files.write_atomic(path, data)


def csv_line(cells: Sequence[Any]) -> str:
    """One line of ``metrics.csv``, ending in a line feed as every line of it does."""
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(cells)
    return out.getvalue()


def read_metrics(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """The columns and the complete rows of a ``metrics.csv`` (none for a missing file).

    What a kill or an earlier version can leave is tolerated: a last line without its line
    end (a row, or a header, cut short) is left out, and so are blank lines (versions before
    the header was written whole could start the file with one). No header: no columns.

    Raises:
        ValueError: a row whose cells do not match the header, naming the file and line.
    """
    if not path.is_file():
        return [], []
    with path.open(newline="") as f:
        text = f.read()
    complete = text[: text.rfind("\n") + 1]  # a kill may have cut the last line short
    lines = [(n, cells) for n, cells in enumerate(csv.reader(io.StringIO(complete)), 1) if cells]
    if not lines:
        return [], []
    (_, header), rows = lines[0], lines[1:]
    for n, cells in rows:
        if len(cells) != len(header):
            raise ValueError(
                f"{path}, line {n}: {len(cells)} cells where the header has {len(header)}; "
                f"the file was changed by something other than rollax."
            )
    return header, [dict(zip(header, cells, strict=True)) for _, cells in rows]


def read_history(path: Path) -> list[dict[str, Any]]:
    """The events of a ``population.jsonl``, oldest first ([] for a missing file).

    A last line a kill cut short (no line end) is left out.
    """
    if not path.is_file():
        return []
    text = path.read_text()
    complete = text[: text.rfind("\n") + 1]
    return [json.loads(line) for line in complete.splitlines() if line.strip()]


class MetricsFile:
    """``metrics.csv`` rows appended, flushed after each, so a kill loses at most one row.

    The header is written whole before any row (a kill leaves it or no file); a kill while
    a row is written can cut that row short, which readers leave out (:func:`read_metrics`).
    A file with a header already keeps it: rows continue in its columns, so a run resumed by
    a version that logs more columns stays one readable table (a column it lacks is not
    written, a column the rows lack is left empty). Only process 0 writes.

    Args:
        path: The file; a new one gets a header of ``fields``.
        fields: The columns, in order.
    """

    def __init__(self, path: Path, fields: Sequence[str]) -> None:
        self.fields = tuple(fields)
        self._file = None
        if not is_writer():
            return
        self._path = path
        header, _ = read_metrics(path)
        if header:
            self.fields = tuple(header)
        else:  # a new file, or one a kill left without a whole header
            write_atomic(path, csv_line(self.fields).encode())
        self._file = path.open("a", newline="")

    def write(self, step: int, row: dict[str, Any]) -> None:
        """Append ``row`` (the value of each column, ``""`` for none) and flush it."""
        if self._file is not None:
            self._file.write(csv_line([row.get(k, "") for k in self.fields]))
            self._file.flush()
            _files.wrote(self._path)

    def close(self) -> None:
        """Close the file (rows are on disk already)."""
        if self._file is not None:
            self._file.close()
            self._file = None


@dataclasses.dataclass(frozen=True)
class RunDirectory:
    """The files of one run.

    Attributes:
        path: The run's directory.
    """

    path: Path

    @property
    def config(self) -> Path:
        """``config.json``: what the run is (resume and eval read it)."""
        return self.path / "config.json"

    @property
    def metrics(self) -> Path:
        """``metrics.csv``: one row per logging interval."""
        return self.path / "metrics.csv"

    @property
    def tensorboard(self) -> Path:
        """``tb/``: TensorBoard event files."""
        return self.path / "tb"

    def point_tensorboard(self, point: str) -> Path:
        """``tb/POINT/``: the TensorBoard run of a sweep's grid point (``"lr=1e-3 ent=0"``)."""
        return self.tensorboard / point.replace(" ", ",")

    @property
    def checkpoints(self) -> Path:
        """``checkpoints/``: one Orbax checkpoint per saved step."""
        return self.path / "checkpoints"

    @property
    def curve(self) -> Path:
        """``curve.png``: the learning curve."""
        return self.path / "curve.png"

    @property
    def evaluation(self) -> Path:
        """``eval.json``: the final evaluation."""
        return self.path / "eval.json"

    @property
    def trackers(self) -> Path:
        """``trackers.json``: the experiment trackers' run ids and the last step each has."""
        return self.path / "trackers.json"

    @property
    def wandb(self) -> Path:
        """``wandb/``: Weights & Biases' own files (offline runs, for ``wandb sync``)."""
        return self.path / "wandb"

    @property
    def population(self) -> Path:
        """``population.jsonl``: a population-based training run's history."""
        return self.path / HISTORY

    @property
    def population_plot(self) -> Path:
        """``population.png``: the schedules a population's members followed."""
        return self.path / "population.png"

    def holds_run(self) -> bool:
        """Whether a run was started here (``config.json`` exists)."""
        return self.config.is_file()

    def write_config(self, config: dict[str, Any]) -> None:
        """Write ``config.json`` atomically.

        A new run directory appears with its ``config.json`` in one step
        (``rollax._files.create_directory``): a kill leaves no directory, or one that
        ``resume`` continues.
        """
        data = json.dumps(config, indent=2).encode()
        if not is_writer():
            return
        if self.path.is_dir():
            _files.write_atomic(self.config, data)
        else:
            _files.create_directory(self.path, {self.config.name: data})

    def read_config(self) -> dict[str, Any]:
        """``config.json`` as a dict.

        Raises:
            ValueError: no run here, or a file that is not a JSON object.
        """
        if not self.holds_run():
            raise ValueError(
                f"RUN_DIR {str(self.path)!r} holds no run (no config.json); start one with "
                f"`rollax train ALGO --env ... --run-dir {self.path}`."
            )
        try:
            stored = json.loads(self.config.read_text())
        except json.JSONDecodeError as e:
            raise ValueError(f"{self.config} is not valid JSON ({e}).") from e
        if not isinstance(stored, dict):
            raise ValueError(f"{self.config} must hold a JSON object, got {type(stored).__name__}.")
        return stored

    def read_metrics(self) -> tuple[list[str], list[dict[str, str]]]:
        """The columns and the complete rows of ``metrics.csv``."""
        return read_metrics(self.metrics)

    def open_metrics(self, fields: Sequence[str]) -> MetricsFile:
        """``metrics.csv`` to append rows to, with a header of ``fields`` if it has none."""
        return MetricsFile(self.metrics, fields)

    def truncate_metrics(self, env_steps: int) -> None:
        """Keep the complete ``metrics.csv`` rows up to ``env_steps`` (training goes on there).

        Rows logged after ``env_steps`` and a row a kill cut short are dropped; a file
        without a header is left for the metrics sink to start again.

        Raises:
            ValueError: a header without ``env_steps``, or a row whose ``env_steps`` is not a
                whole number (naming the file and what is wrong).
        """
        fields, rows = read_metrics(self.metrics)
        if not fields:
            return
        if "env_steps" not in fields:
            raise ValueError(f"{self.metrics}: its header lacks the column env_steps.")
        kept = []
        for row in rows:
            try:
                steps = int(row["env_steps"])
            except ValueError:
                raise ValueError(
                    f"{self.metrics}: a row's env_steps, {row['env_steps']!r}, is not a whole "
                    "number; the file was changed by something other than rollax."
                ) from None
            if steps <= env_steps:
                kept.append(csv_line([row[k] for k in fields]))
        write_atomic(self.metrics, (csv_line(fields) + "".join(kept)).encode())

    def holds_population(self) -> bool:
        """Whether a population was trained here (``population.jsonl`` exists)."""
        return self.population.is_file()

    def read_population(self) -> list[dict[str, Any]]:
        """The population's history, oldest event first ([] without one)."""
        return read_history(self.population)

    def append_population(self, event: dict[str, Any]) -> None:
        """Append one event to the population's history, flushed (on process 0)."""
        if is_writer():
            with self.population.open("a") as f:
                f.write(json.dumps(event) + "\n")
                f.flush()
            _files.wrote(self.population)

    def truncate_population(self, env_steps: int) -> None:
        """Keep the population's events up to ``env_steps`` (training goes on there).

        Events past ``env_steps`` and a line a kill cut short are dropped; a history with
        none up to ``env_steps`` is left as it is.
        """
        kept = [e for e in self.read_population() if e["env_steps"] <= env_steps]
        if kept:
            write_atomic(self.population, "".join(json.dumps(e) + "\n" for e in kept).encode())

    def write_evaluation(self, result: dict[str, Any]) -> None:
        """Write ``eval.json`` atomically."""
        write_atomic(self.evaluation, json.dumps(result, indent=2).encode())

    def read_evaluation(self) -> dict[str, Any] | None:
        """``eval.json`` as a dict (``None`` before the final evaluation)."""
        if not self.evaluation.is_file():
            return None
        return json.loads(self.evaluation.read_text())

    def read_trackers(self) -> dict[str, Any]:
        """``trackers.json``: each tracker's entry (``{}`` without the file).

        A file that is not what rollax writes is said on stderr and read as empty: the
        trackers start new runs.
        """
        if not self.trackers.is_file():
            return {}
        try:
            entries = json.loads(self.trackers.read_text())
        except (OSError, ValueError) as e:
            entries = f"unreadable ({e})"
        if not isinstance(entries, dict):
            print(
                f"rollax: {self.trackers} is not what rollax writes ({str(entries)[:200]}); "
                "the trackers start new runs.",
                file=sys.stderr,
            )
            return {}
        return entries

    def write_trackers(self, entries: dict[str, Any]) -> None:
        """Write ``trackers.json`` atomically."""
        write_atomic(self.trackers, json.dumps(entries, indent=2).encode())

    def discard_temporaries(self) -> None:
        """Remove the temporary files a killed write left here (``.NAME.tmp-PID.EXT``)."""
        if is_writer():
            for stale in self.path.glob(".*.tmp-*"):
                stale.unlink(missing_ok=True)
