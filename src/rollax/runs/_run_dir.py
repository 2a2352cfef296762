"""A run directory on disk, and writing into it without ever leaving a half-written file.

A run directory holds everything about one run::

    RUN_DIR/
      config.json      the algorithm, environment, its config and the RunConfig (what resume reads)
      metrics.csv      one row per logging interval
      tb/              TensorBoard event files
      curve.png        the learning curve, redrawn at every checkpoint
      checkpoints/     Orbax checkpoints, one directory per environment step
      eval.json        returns of the final policy (after the budget is spent)
      trackers.json    with --wandb: the W&B run id and the last step it was sent
      wandb/           with --wandb: W&B's own files (unless WANDB_DIR says elsewhere)

A kill at any instant leaves every file whole or absent (see :mod:`rollax._files`): the
directory appears with its ``config.json`` in one rename, so a run directory always holds a
run that ``resume`` continues; JSON and PNG files and the header of ``metrics.csv`` are
written to a temporary file, synced and renamed; ``metrics.csv`` rows are only appended,
each flushed, so a kill can cut short the last one, which every reader leaves out and resume
drops (with the rows past the checkpoint it continues from). Resume also removes the
temporary files a kill left. With several JAX processes only process 0 writes.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax

from rollax import _files

__all__ = ["RunDirectory", "csv_line", "is_writer", "read_metrics", "write_atomic"]


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

    def discard_temporaries(self) -> None:
        """Remove the temporary files a killed write left here (``.NAME.tmp-PID.EXT``)."""
        if is_writer():
            for stale in self.path.glob(".*.tmp-*"):
                stale.unlink(missing_ok=True)
