"""Experiment trackers: a run logged to Weights & Biases and MLflow, for real, as to metrics.csv.

No network is reachable here, so W&B runs in offline mode, where it writes each session of a
run to ``RUN_DIR/wandb/offline-run-*/run-ID.wandb``. Offline W&B cannot continue a run, so a
resumed run is a second offline segment: the tests check that the segments share one run id,
and that between them they hold every row of ``metrics.csv`` once, at contiguous steps.
MLflow logs to a local ``sqlite:///`` store, which the tests read back with MLflow's client.
"""

from __future__ import annotations

import dataclasses
import json
import struct
from pathlib import Path

import pytest

from rollax.agents.ppo import PPOConfig
from rollax.runs import RunConfig, resume, train, write_video
from rollax.runs._run_dir import read_metrics

pytestmark = pytest.mark.extra("wandb", "mlflow")

CONFIG = PPOConfig(
    num_envs=4, num_steps=16, num_epochs=1, num_minibatches=1, hidden_sizes=(8,),
    total_steps=256,
)  # fmt: skip
"""64 environment steps per iteration: rows at 64, 128, 192 and 256."""


@pytest.fixture(autouse=True)
def offline_trackers(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # MLflow keeps artifacts under the working directory
    monkeypatch.delenv("MLFLOW_EXPERIMENT_NAME", raising=False)
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.delenv("WANDB_DIR", raising=False)
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_CONFIG_DIR", str(tmp_path / "wandb-config"))
    monkeypatch.setenv("WANDB_CACHE_DIR", str(tmp_path / "wandb-cache"))
    monkeypatch.setenv("WANDB_DATA_DIR", str(tmp_path / "wandb-data"))


def _records(path: Path) -> list[bytes]:
    """The records of a W&B transaction log (``run-ID.wandb``): LevelDB's log format after
    W&B's 7-byte header, in 32 KiB blocks of chunks (CRC, length, type; 1 or 4 end one)."""
    data = path.read_bytes()
    assert data[:4] == b":W&B", path
    records, pending, pos = [], b"", 7
    while pos + 7 <= len(data):
        left = 32768 - pos % 32768
        if left < 7:  # a block's tail too short for a chunk header is padding
            pos += left
            continue
        _, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        pending += data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):  # a whole record, or the last chunk of one
            records.append(pending)
            pending = b""
    return records


def _complete_log(path: Path, seconds: float = 60.0) -> list:
    """The parsed records of the log at ``path``, read once W&B has written its exit record.

    ``run.finish()`` returns when W&B's service has handled the exit, but the service (a
    process of its own) may write the log's last records a moment later: a loaded CI machine
    once read a log without its history. Waits up to ``seconds`` for the exit record.
    """
    import time

    from wandb.proto import wandb_internal_pb2

    deadline = time.monotonic() + seconds
    while True:
        records = []
        for data in _records(path):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(data)
            records.append(record)
        if any(r.WhichOneof("record_type") == "exit" for r in records):
            return records
        assert time.monotonic() < deadline, f"{path} has no exit record after {seconds} s"
        time.sleep(0.2)


def _segments(run_dir: Path) -> list[dict]:
    """Each offline segment of the run, in order: its id, config and logged rows.

    ``run_dir`` is where W&B's own ``wandb/`` folder is: the run directory, or ``WANDB_DIR``.
    """
    segments = []
    for path in sorted((run_dir / "wandb").glob("offline-run-*/run-*.wandb")):
        segment = {"id": None, "config": {}, "rows": []}
        for record in _complete_log(path):
            kind = record.WhichOneof("record_type")
            if kind == "run":
                segment["id"] = record.run.run_id
                updates = record.run.config.update
                segment["config"] = {u.key: json.loads(u.value_json) for u in updates}
            elif kind == "history":
                items = record.history.item
                segment["rows"].append(
                    {(i.key or "/".join(i.nested_key)): json.loads(i.value_json) for i in items}
                )
        segments.append(segment)
    return segments


def _tracked(run_dir: Path, uri: str) -> RunConfig:
    """Rows at 64, 128, 192 and 256, checkpoints at 128 and 256, to W&B and MLflow at ``uri``."""
    return RunConfig(
        run_dir=str(run_dir), log_every=64, checkpoint_every=128, eval_episodes=2,
        progress=False, wandb="rollax-tests", mlflow=uri,
    )  # fmt: skip


class Crash(Exception):
    """What the callback raises to end a run between checkpoints, as a kill would."""


def _mlflow_history(uri: str, run_id: str, name: str) -> list[tuple[int, float]]:
    from mlflow.tracking import MlflowClient

    history = MlflowClient(tracking_uri=uri).get_metric_history(run_id, name)
    return sorted((m.step, m.value) for m in history)


def test_a_resumed_run_continues_its_tracker_runs_with_every_row_once(tmp_path):
    from mlflow.tracking import MlflowClient

    run_dir, uri = tmp_path / "run", f"sqlite:///{tmp_path / 'mlflow.db'}"
    run_config = _tracked(run_dir, uri)

    def crash_after_192(run, row):
        if run.env_steps == 192:  # sent to the trackers, past the checkpoint at 128
            raise Crash

    with pytest.raises(Crash):
        train(CONFIG, run_config, callback=crash_after_192)
    resume(run_dir)
    _, csv_rows = read_metrics(run_dir / "metrics.csv")
    steps = [int(r["env_steps"]) for r in csv_rows]
    assert steps == [64, 128, 192, 256]
    record = json.loads((run_dir / "trackers.json").read_text())

    # W&B: two offline segments of one run, the row at 192 (computed twice) sent once.
    first, second = _segments(run_dir)
    assert first["id"] and first["id"] == second["id"]
    assert first["config"]["algo"] == "ppo" and first["config"]["run"]["wandb"] == "rollax-tests"
    trained = [r for s in (first, second) for r in s["rows"] if "episodes" in r]
    assert [r["env_steps"] for r in trained] == steps
    for sent, row in zip(trained, csv_rows, strict=True):
        for name in ("updates", "episodes", "entropy", "value_loss"):  # metrics.csv's names
            assert sent[name] == pytest.approx(float(row[name])), name
    evaluation = [r for r in second["rows"] if "eval/deterministic_return" in r]
    assert evaluation and evaluation[0]["env_steps"] == 256
    assert record["wandb"] == {"project": "rollax-tests", "id": first["id"], "logged_to": 256}

    # MLflow: one run, finished, each row once, the config as params, the curve as artifact.
    run_id = record["mlflow"]["id"]
    assert record["mlflow"] == {"uri": uri, "id": run_id, "logged_to": 256}
    for name in ("updates", "episodes", "entropy", "value_loss"):
        assert _mlflow_history(uri, run_id, name) == [
            (int(r["env_steps"]), pytest.approx(float(r[name]))) for r in csv_rows
        ], name
    assert [s for s, _ in _mlflow_history(uri, run_id, "eval/deterministic_return")] == [256]
    client = MlflowClient(tracking_uri=uri)
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED" and run.info.run_name == "run"
    assert run.data.params["algo"] == "ppo" and run.data.params["config.num_envs"] == "4"
    assert client.get_experiment(run.info.experiment_id).name == "rollax"
    assert [a.path for a in client.list_artifacts(run_id)] == ["curve.png"]

    # A video of the run goes to the same tracker runs.
    write_video(run_dir, tmp_path / "episode.gif")
    assert sorted(a.path for a in client.list_artifacts(run_id)) == ["curve.png", "episode.gif"]
    *_, third = sorted((run_dir / "wandb").glob("offline-run-*"))
    assert (third / "files" / "episode.gif").is_file() and third.name.endswith(first["id"])


def test_a_tracker_failing_mid_run_is_said_once_and_the_run_goes_on(tmp_path, capsys):
    import wandb
    from mlflow.tracking import MlflowClient

    run_dir, uri = tmp_path / "run", f"sqlite:///{tmp_path / 'mlflow.db'}"
    run_config = _tracked(run_dir, uri)

    def end_the_tracker_runs_at_128(run, row):
        if run.env_steps == 128:  # each tracker's run ends under rollax: later calls raise
            wandb.teardown()  # W&B's service shuts down
            mlflow_id = json.loads((run_dir / "trackers.json").read_text())["mlflow"]["id"]
            MlflowClient(tracking_uri=uri).delete_run(mlflow_id)

    train(CONFIG, run_config, callback=end_the_tracker_runs_at_128)
    err = capsys.readouterr().err
    for name in ("Weights & Biases", "MLflow"):
        assert err.count(f"{name} failed") == 1, err
    assert "the run goes on without it" in err
    _, rows = read_metrics(run_dir / "metrics.csv")
    assert [int(r["env_steps"]) for r in rows] == [64, 128, 192, 256]
    assert (run_dir / "eval.json").is_file()
    (segment,) = _segments(run_dir)
    assert [r["env_steps"] for r in segment["rows"]] == [64, 128]
    mlflow_id = json.loads((run_dir / "trackers.json").read_text())["mlflow"]["id"]
    assert [s for s, _ in _mlflow_history(uri, mlflow_id, "updates")] == [64, 128]


def test_sweep_members_keep_their_names_within_what_mlflow_allows():
    from mlflow.utils.validation import _validate_metric_name

    from rollax.runs._trackers import _mlflow_name

    name = "episode_return[learning_rate=0.001 ent_coef=0]_seed1"
    assert _mlflow_name(name) == "episode_return/learning_rate:0.001 ent_coef:0/seed1"
    assert _mlflow_name("eval/deterministic_return") == "eval/deterministic_return"
    assert _mlflow_name("episode_return[lr=1e+3 gamma=0.99]_seed0") == (
        "episode_return/lr:1e_3 gamma:0.99/seed0"
    )
    for name in ("episode_return[lr=1e+3 gamma=0.99]_seed0", "episode_return[x=(1, 2)]_seed3"):
        _validate_metric_name(_mlflow_name(name))  # MLflow's own check: raises if refused


def test_every_sweep_member_s_return_reaches_both_trackers_under_its_metrics_csv_name(tmp_path):
    from rollax.runs._trackers import _mlflow_name

    run_dir, uri = tmp_path / "run", f"sqlite:///{tmp_path / 'mlflow.db'}"
    config = CONFIG.replace(num_seeds=2, sweep=("learning_rate=1e-3,2e-3",))
    train(config, dataclasses.replace(_tracked(run_dir, uri), eval_episodes=0))
    header, csv_rows = read_metrics(run_dir / "metrics.csv")
    members = [c for c in header if c.startswith("episode_return[")]
    assert len(members) == 4, header  # 2 grid points x 2 seeds
    (segment,) = _segments(run_dir)
    sent = {r["env_steps"]: r for r in segment["rows"] if "episodes" in r}
    run_id = json.loads((run_dir / "trackers.json").read_text())["mlflow"]["id"]
    for name in members:
        logged = [(int(r["env_steps"]), float(r[name])) for r in csv_rows if r[name] != ""]
        assert logged, name  # every member ended an episode in some row
        assert [(step, sent[step][name]) for step, _ in logged] == pytest.approx(logged), name
        assert _mlflow_history(uri, run_id, _mlflow_name(name)) == pytest.approx(logged), name


def test_a_damaged_tracker_record_starts_new_tracker_runs(tmp_path, capsys):
    from rollax.runs._run_dir import RunDirectory
    from rollax.runs._trackers import TrackerRecord

    (tmp_path / "trackers.json").write_text('{"wandb": ')  # cut short by hand
    record = TrackerRecord(RunDirectory(tmp_path))
    assert record.get("wandb") == {} and "trackers start new runs" in capsys.readouterr().err
    (tmp_path / "trackers.json").write_text('{"wandb": 3}')
    assert TrackerRecord(RunDirectory(tmp_path)).get("wandb") == {}


def test_w_and_b_keeps_its_files_where_the_user_s_wandb_dir_says(tmp_path, monkeypatch):
    # A user who set WANDB_DIR (a scratch disk on a cluster) expects W&B's files there; the
    # run directory used to take them regardless.
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setenv("WANDB_DIR", str(scratch))
    run_dir = tmp_path / "run"
    config = RunConfig(run_dir=str(run_dir), log_every=128, eval_episodes=0, progress=False,
                       wandb="rollax-tests")  # fmt: skip
    train(CONFIG, config)
    assert not (run_dir / "wandb").exists()
    (segment,) = _segments(scratch)
    steps = [r["env_steps"] for r in segment["rows"] if "episodes" in r]
    assert steps == [128, 256]


def test_tracker_settings_that_are_not_text_are_refused():
    with pytest.raises(ValueError, match=r"RunConfig.wandb must be a W&B project name, got 3"):
        RunConfig(wandb=3).validate()
    with pytest.raises(ValueError, match=r"RunConfig.mlflow must be a tracking URI, got \['x'\]"):
        RunConfig(mlflow=["x"]).validate()


def test_a_run_written_before_the_trackers_existed_still_loads(tmp_path):
    from rollax.runs._run import read_run_config
    from rollax.runs._run_dir import RunDirectory
    from rollax.training import config_to_json

    run = config_to_json(RunConfig())
    del run["wandb"], run["mlflow"]  # what config.json held before
    stored = {"algo": "ppo", "env": "CartPole-v1", "config": config_to_json(CONFIG), "run": run}
    (tmp_path / "config.json").write_text(json.dumps(stored))
    _, config, run_config = read_run_config(RunDirectory(tmp_path))
    assert run_config == RunConfig() and config == CONFIG
