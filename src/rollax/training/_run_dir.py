"""A run directory on disk, and writing into it without ever leaving a half-written file.

A run directory holds everything about one run::

    RUN_DIR/
      config.json      the algorithm, environment, its config and the RunConfig (what resume reads)
      metrics.csv      one row per logging interval
      tb/              TensorBoard event files
      curve.png        the learning curve, redrawn at every checkpoint
      checkpoints/     Orbax checkpoints, one directory per environment step
      eval.json        returns of the final policy (after the budget is spent)

JSON and PNG files are written to a temporary file and renamed; ``metrics.csv`` rows are
only appended (resume drops rows past the checkpoint it continues). With several JAX
processes only process 0 writes.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
from pathlib import Path
from typing import Any

import jax

__all__ = ["RunDirectory", "is_writer", "write_atomic"]


def is_writer() -> bool:
    """Whether this process writes run files (process 0 of a multi-process run)."""
    return jax.process_index() == 0


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename."""
    if not is_writer():
        return
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


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

    def holds_run(self) -> bool:
        """Whether a run was started here (``config.json`` exists)."""
        return self.config.is_file()

    def write_config(self, config: dict[str, Any]) -> None:
        """Write ``config.json`` atomically (creating the directory)."""
        if is_writer():
            self.path.mkdir(parents=True, exist_ok=True)
        write_atomic(self.config, json.dumps(config, indent=2).encode())

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
        """Drop ``metrics.csv`` rows logged after ``env_steps`` (training goes on from there)."""
        if not self.metrics.is_file():
            return
        with self.metrics.open(newline="") as f:
            reader = csv.DictReader(f)
            fields = reader.fieldnames or []
            rows = [row for row in reader if int(row["env_steps"]) <= env_steps]
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")  # the metrics sink's line ending
        writer.writerow(fields)
        writer.writerows([row[k] for k in fields] for row in rows)
        write_atomic(self.metrics, out.getvalue().encode())
