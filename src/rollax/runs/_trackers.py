"""Experiment trackers: a run's metrics sent to Weights & Biases and MLflow beside ``metrics.csv``.

A tracker receives what the run's other sinks receive: every ``metrics.csv`` row, under the
same names and in the same units (``env_steps`` is the x-axis of every metric), the final
evaluation's returns, and the learning curve ``curve.png`` after each checkpoint. The run's
configuration (``config.json``'s content) is the tracker run's config.

Three promises:

- **Resume continues the tracker's run.** Its id is kept in the run directory
  (``trackers.json``), with the last step it was sent. ``rollax resume`` opens the same run
  and sends only the rows past that step: the rows between the checkpoint and a kill, which
  the resumed run computes again bit for bit, are not sent twice, so the tracker's steps stay
  contiguous. (A kill in the instant between sending a row and recording it can leave that
  one row sent twice, never lost.)
- **Only process 0 logs** in a multi-process run (the process that writes the run directory).
- **A tracker never stops or corrupts training.** Whatever it raises (no network, a full
  disk, a run closed under it) is said once on stderr, and the run goes on without it;
  ``metrics.csv`` and TensorBoard still hold every row.
"""

from __future__ import annotations

import abc
import contextlib
import glob
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

from rollax.runs._run_dir import RunDirectory, is_writer

__all__ = ["MlflowTracker", "Tracker", "TrackerRecord", "WandbTracker", "open_trackers"]

_OFFLINE_MODES = ("offline", "dryrun", "disabled")


class Tracker(abc.ABC):
    """A run's connection to one experiment tracker; failures turn it off, never the run.

    The base keeps what every tracker shares: the guard, the record of the last step sent
    (rows at or before it are not sent again after a resume) and the entry in
    ``trackers.json``. Subclasses implement ``_is_open``, ``_identity``, ``_send``,
    ``_upload``, ``_close`` and ``_abandon``; the public methods call them through
    :meth:`_guard`.

    Args:
        directory: The run directory.
        record: The run's ``trackers.json``, shared by its trackers.
    """

    name = "tracker"
    """How messages name it."""
    key = "tracker"
    """Its entry in ``trackers.json``."""

    def __init__(self, directory: RunDirectory, record: TrackerRecord) -> None:
        self._broken = False
        self._directory = directory
        self._record = record
        self._sent_to = -1

    @property
    def active(self) -> bool:
        """Whether the tracker still receives what the run logs."""
        return not self._broken

    def _guard(self, doing: str, action: Any, *args: Any) -> Any:
        """``action(*args)``; on any exception, say so once and stop using the tracker."""
        if self._broken:
            return None
        try:
            return action(*args)
        except Exception as e:  # a tracker's failure must not end the run
            self._broken = True
            print(
                f"rollax: {self.name} failed while {doing} ({type(e).__name__}: {e}); the run "
                "goes on without it (metrics.csv and TensorBoard keep every row).",
                file=sys.stderr,
            )
            with contextlib.suppress(Exception):
                self._abandon()
            return None

    @abc.abstractmethod
    def _abandon(self) -> None:
        """Release what the tracker holds after a failure (best effort; errors are ignored)."""

    def write(self, step: int, row: dict[str, Any]) -> None:
        """Send a ``metrics.csv`` row (numbers, or ``""`` for none) at environment step ``step``."""
        self._guard("logging metrics", self._write, step, row)

    def scalars(self, values: dict[str, float], step: int) -> None:
        """Send values under their full names (``{"eval/deterministic_return": 500.0}``)."""
        if self._is_open():
            self._guard("logging the evaluation", self._send, values, step)

    def upload(self, path: Path) -> None:
        """Send a file of the run directory (the learning curve), replacing an earlier copy."""
        if path.is_file():
            self._guard(f"uploading {path.name}", self._upload, path)

    def close(self) -> None:
        """Finish the tracker's run (a resume opens it again)."""
        self._guard("finishing its run", self._close)

    def _write(self, step: int, row: dict[str, Any]) -> None:
        if not self._is_open() or step <= self._sent_to:
            return  # sent before a resume: the resumed run computes the same row again
        self._send({k: float(v) for k, v in row.items() if v != ""}, step)
        self._sent_to = step
        self._save_record()

    def _resume_from(self, entry: dict[str, Any]) -> None:
        """Take the last step sent from the tracker's ``trackers.json`` entry."""
        self._sent_to = int(entry.get("logged_to", -1))

    def _save_record(self) -> None:
        self._record.put(self.key, {**self._identity(), "logged_to": self._sent_to})

    @abc.abstractmethod
    def _is_open(self) -> bool:
        """Whether the tracker's run is open (started, and not finished)."""

    @abc.abstractmethod
    def _identity(self) -> dict[str, Any]:
        """What ``trackers.json`` keeps to open the same run again (its id, ...)."""

    @abc.abstractmethod
    def _send(self, values: dict[str, float], step: int) -> None:
        """Send named numbers at environment step ``step``."""

    @abc.abstractmethod
    def _upload(self, path: Path) -> None:
        """Send a file (the guarded part of :meth:`upload`)."""

    @abc.abstractmethod
    def _close(self) -> None:
        """Finish the run (the guarded part of :meth:`close`)."""


class WandbTracker(Tracker):
    """The run as a Weights & Biases run of ``project`` (``pip install 'rollax[wandb]'``).

    Its id is kept in ``trackers.json`` so that a resume continues it. W&B's own files go to
    the run directory's ``wandb/``, or to ``$WANDB_DIR/wandb/`` where the user set it; with
    ``WANDB_MODE=offline`` they are the whole record, which ``wandb sync
    RUN_DIR/wandb/offline-run-*`` uploads later. Offline, W&B cannot continue a run: each
    session of the run (the first, each resume) is an offline segment with the same id, and
    they hold the rows once between them.

    Args:
        directory: The run directory.
        project: The W&B project.
        config: The run's configuration (``config.json``'s content).
    """

    name = "Weights & Biases"
    key = "wandb"

    def __init__(
        self,
        directory: RunDirectory,
        record: TrackerRecord,
        project: str,
        config: dict[str, Any],
        continuing_only: bool = False,
    ) -> None:
        super().__init__(directory, record)
        self._run: Any = None
        self._guard("starting its run", self._start, project, config, continuing_only)

    def _start(self, project: str, config: dict[str, Any], continuing_only: bool) -> None:
        import wandb

        entry = self._record.get(self.key)
        run_id = entry.get("id")
        if run_id is None and continuing_only:
            return
        self._resume_from(entry)
        offline = os.environ.get("WANDB_MODE", "").lower() in _OFFLINE_MODES
        # W&B's files go where the user's WANDB_DIR says (a scratch disk), else to the run;
        # named here, as W&B reads its environment once per process.
        scratch = os.environ.get("WANDB_DIR")
        (Path(scratch, "wandb") if scratch else self._directory.wandb).mkdir(
            parents=True, exist_ok=True
        )
        root = scratch or str(self._directory.path)  # W&B writes under ROOT/wandb/
        run = wandb.init(
            project=project,
            id=run_id,  # None: W&B draws one, kept in trackers.json
            name=self._directory.path.name,
            dir=root,
            config=None if run_id else config,  # a resumed run keeps the config it started with
            resume=None if offline else "allow",  # offline W&B cannot resume (and warns)
            reinit="create_new",  # never the user's own run, nor another rollax run's
            settings=wandb.Settings(console="off"),  # rollax's terminal output stays its own
        )
        self._run = run
        run.define_metric("env_steps")
        run.define_metric("*", step_metric="env_steps")
        self._save_record()

    def _is_open(self) -> bool:
        return self._run is not None

    def _identity(self) -> dict[str, Any]:
        return {"project": self._run.project, "id": self._run.id}

    def _send(self, values: dict[str, float], step: int) -> None:
        self._run.log({**values, "env_steps": step})

    def _upload(self, path: Path) -> None:
        if self._run is not None:  # W&B reads the path as a pattern: escape [, * and ?
            self._run.save(glob.escape(str(path)), base_path=str(path.parent), policy="now")

    def _close(self) -> None:
        if self._run is not None:
            self._run.finish()
            self._run = None

    def _abandon(self) -> None:
        run, self._run = self._run, None
        if run is not None:
            run.finish(exit_code=1)


class MlflowTracker(Tracker):
    """The run as an MLflow run at tracking URI ``uri`` (``pip install 'rollax[mlflow]'``).

    The run goes to the experiment named by ``MLFLOW_EXPERIMENT_NAME`` (``"rollax"`` without
    it), named after the run directory; its id is kept in ``trackers.json`` so that a resume
    continues it. The configuration is the run's params (``config.learning_rate``,
    ``run.seed``, ...), logged when the run is created. Metric names are ``metrics.csv``'s,
    except for the characters MLflow refuses: a sweep member's return
    ``episode_return[learning_rate=0.001]_seed0`` is ``episode_return/learning_rate:0.001/seed0``.
    Artifacts (``curve.png``) go where the experiment keeps them (MLflow's default: under the
    working directory).

    Args:
        directory: The run directory.
        uri: The tracking URI (``sqlite:///mlflow.db``, ``http://host:5000``, ...).
        config: The run's configuration (``config.json``'s content).
    """

    name = "MLflow"
    key = "mlflow"

    def __init__(
        self,
        directory: RunDirectory,
        record: TrackerRecord,
        uri: str,
        config: dict[str, Any],
        continuing_only: bool = False,
    ) -> None:
        super().__init__(directory, record)
        self._uri = uri
        self._client: Any = None
        self._run_id: str | None = None
        self._guard("starting its run", self._start, config, continuing_only)

    def _start(self, config: dict[str, Any], continuing_only: bool) -> None:
        from mlflow.entities import Param
        from mlflow.tracking import MlflowClient

        entry = self._record.get(self.key)
        run_id = entry.get("id")
        if run_id is None and continuing_only:
            return
        self._resume_from(entry)
        client = MlflowClient(tracking_uri=self._uri)
        if run_id is None:
            name = os.environ.get("MLFLOW_EXPERIMENT_NAME", "rollax")
            experiment = client.get_experiment_by_name(name)
            if experiment is None:
                experiment_id = client.create_experiment(name)
            else:
                experiment_id = experiment.experiment_id
            run = client.create_run(experiment_id, run_name=self._directory.path.name)
            run_id = run.info.run_id
            params = [Param(k, v) for k, v in _flatten(config)]
            for start in range(0, len(params), 100):  # MLflow's most params per batch
                client.log_batch(run_id, params=params[start : start + 100])
        else:
            client.update_run(run_id, status="RUNNING")
        self._client, self._run_id = client, run_id
        self._save_record()

    def _is_open(self) -> bool:
        return self._run_id is not None

    def _identity(self) -> dict[str, Any]:
        return {"uri": self._uri, "id": self._run_id}

    def _send(self, values: dict[str, float], step: int) -> None:
        from mlflow.entities import Metric

        stamp = int(time.time() * 1000)
        metrics = [Metric(_mlflow_name(k), v, stamp, step) for k, v in values.items()]
        for start in range(0, len(metrics), 1000):  # MLflow's most metrics per batch
            self._client.log_batch(self._run_id, metrics=metrics[start : start + 1000])

    def _upload(self, path: Path) -> None:
        if self._run_id is not None:
            self._client.log_artifact(self._run_id, str(path))

    def _close(self) -> None:
        if self._run_id is not None:
            self._client.set_terminated(self._run_id, "FINISHED")
            self._run_id = None

    def _abandon(self) -> None:
        run_id, self._run_id = self._run_id, None
        if run_id is not None:
            self._client.set_terminated(run_id, "FAILED")


def _mlflow_name(name: str) -> str:
    """A ``metrics.csv`` name in the characters MLflow allows.

    MLflow refuses ``[``, ``]`` and ``=``: ``episode_return[lr=0.001]_seed0`` becomes
    ``episode_return/lr:0.001/seed0``; any other character it refuses (a sweep value written
    ``1e+3``) becomes ``_``.
    """
    name = name.replace("]_", "/").replace("[", "/").replace("]", "/").replace("=", ":")
    return re.sub(r"[^/\w.\- :]", "_", name)


def _flatten(config: dict[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    """``{"config": {"lr": 0.001}}`` as ``[("config.lr", "0.001")]``, values as JSON text."""
    pairs = []
    for key, value in config.items():
        if isinstance(value, dict):
            pairs += _flatten(value, f"{prefix}{key}.")
        else:
            text = value if isinstance(value, str) else json.dumps(value)
            pairs.append((f"{prefix}{key}", text[:6000]))  # MLflow's longest param value
    return pairs


class TrackerRecord:
    """``trackers.json``: each tracker's run id and the last step sent to it.

    A run's trackers share one: each has the run directory rewrite the whole file
    (atomically) with its own entry updated.

    Args:
        directory: The run directory (its ``trackers.json`` is read if it exists).
    """

    def __init__(self, directory: RunDirectory) -> None:
        self._directory = directory
        self._entries = directory.read_trackers()

    def get(self, tracker: str) -> dict[str, Any]:
        """What the file holds for ``tracker`` (``"wandb"``, ``"mlflow"``); empty if nothing."""
        entry = self._entries.get(tracker)
        return dict(entry) if isinstance(entry, dict) else {}

    def put(self, tracker: str, entry: dict[str, Any]) -> None:
        """Replace ``tracker``'s entry and write the file."""
        self._entries[tracker] = entry
        self._directory.write_trackers(self._entries)


def open_trackers(
    directory: RunDirectory, run_config: Any, config: dict[str, Any], continuing_only: bool = False
) -> list:
    """The trackers a run's :class:`~rollax.runs.RunConfig` asks for, on process 0 only.

    Args:
        directory: The run directory.
        run_config: The run's ``RunConfig`` (its ``wandb`` and ``mlflow`` fields).
        config: The run's configuration, as ``config.json`` holds it.
        continuing_only: Open only the tracker runs the run already has (what adds a file to
            a run, such as its video, never starts one).
    """
    if not is_writer():
        return []
    trackers: list[Tracker] = []
    record = TrackerRecord(directory)
    if run_config.wandb:
        trackers.append(WandbTracker(directory, record, run_config.wandb, config, continuing_only))
    if run_config.mlflow:
        trackers.append(
            MlflowTracker(directory, record, run_config.mlflow, config, continuing_only)
        )
    return trackers
