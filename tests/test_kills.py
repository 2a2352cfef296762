"""A run killed (SIGKILL) at any instant leaves a directory that ``rollax resume`` carries on.

Every write to a run directory is reported through :func:`rollax._files.wrote`; with the
test-only ``ROLLAX_TEST_KILL_AFTER_WRITES=N`` a process kills itself right after its N-th.
The slow tests count a tiny run's writes once (16: every kind a run makes), kill it after
each of them in turn and resume; then the same for a resume to a larger budget, up to its
first checkpoint (what resume writes before then is its own). The resumed run must equal
the run that was never killed: metrics, checkpoints, evaluation. Compiled programs come from
a persistent compilation cache the subprocesses share, and the resumes run one after another
in one process (``rollax.cli.main``, the command's own entry point), so nothing compiles per
kill (about 3 minutes on 2 cores for both). The fast tests check the pieces that make a kill
harmless: the header written whole, a row cut short left out, incomplete checkpoints
ignored.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

from _commands import rollax_in_one_process
from rollax._files import KILL_AFTER_WRITES, write_atomic
from rollax.checkpoints import Checkpointer
from rollax.runs._run_dir import RunDirectory, read_metrics

TINY = [
    "--env", "CartPole-v1", "--num-envs", "4", "--num-steps", "16", "--num-epochs", "1",
    "--num-minibatches", "1", "--hidden-sizes", "8", "--num-seeds", "2", "--no-progress",
]  # fmt: skip
"""Two seeds (as the run that showed the fault), 64 steps per iteration."""
RUN = [*TINY, "--total-steps", "128", "--log-every", "64", "--checkpoint-every", "64",
       "--keep-checkpoints", "1", "--eval-episodes", "2"]  # fmt: skip
"""Two rows, two checkpoints (the first deleted after the second), an evaluation: every
kind of write a run makes."""
UNSTABLE = {"wall_time", "steps_per_second"}
"""metrics.csv columns that differ between two runs of the same computation."""


# One worker runs the module: both tests start from the run its fixture trains (make test's
# --dist loadgroup keeps a group on one worker).
pytestmark = [pytest.mark.xdist_group("kills"), pytest.mark.processes]


@pytest.fixture(scope="module")
def cli_env():
    """Environment of the subprocesses (the test run's compilation cache: tests/conftest.py).
    Each kill comes right after one of rollax's own writes, never inside JAX's cache writes."""
    env = {k: v for k, v in os.environ.items() if k != KILL_AFTER_WRITES}
    env["JAX_PLATFORMS"] = "cpu"
    return env


def rollax(*args: str, env: dict, kill_after: int | None = None) -> subprocess.CompletedProcess:
    """``rollax ARGS`` in a subprocess; with ``kill_after``, killed after that many writes."""
    if kill_after is not None:
        env = {**env, KILL_AFTER_WRITES: str(kill_after)}
    return subprocess.run(
        [sys.executable, "-m", "rollax", *args], env=env, capture_output=True, text=True
    )


def writes(stderr: str, run_dir: Path) -> list[str]:
    """The writes a process reported, as paths relative to ``run_dir``."""
    found = re.findall(r"^rollax: write \d+: (.*)$", stderr, re.MULTILINE)
    return [os.path.relpath(path, run_dir) for path in found]


def snapshot(run_dir: Path) -> dict:
    """What two runs of the same computation have in common: names, metrics, evaluation."""
    fields, rows = read_metrics(run_dir / "metrics.csv")
    config = json.loads((run_dir / "config.json").read_text())
    config["run"].pop("run_dir")
    return {
        "files": sorted(p.name for p in run_dir.iterdir() if p.name != "tb"),
        "checkpoints": sorted(p.name for p in (run_dir / "checkpoints").iterdir()),
        "config": config,
        "fields": fields,
        "rows": [{k: v for k, v in row.items() if k not in UNSTABLE} for row in rows],
        "eval": json.loads((run_dir / "eval.json").read_text()),
    }


@pytest.fixture(scope="module")
def whole(tmp_path_factory, cli_env) -> tuple[Path, list[str]]:
    """The tiny run, never killed, and the writes it made (relative to its directory)."""
    run_dir = tmp_path_factory.mktemp("runs") / "whole"
    done = rollax("train", "ppo", *RUN, "--run-dir", str(run_dir), env=cli_env, kill_after=0)
    assert done.returncode == 0, done.stderr
    return run_dir, writes(done.stderr, run_dir)


def check_resumed(commands: list[list[str]], expected_status: list[int], env: dict) -> None:
    """Run the commands in one process; each must exit with its status (2: no run there)."""
    results = rollax_in_one_process(commands, env)
    for result, status in zip(results, expected_status, strict=True):
        assert result["status"] == status, result
        if status == 2:
            assert "holds no run (no config.json)" in result["stderr"], result


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_run_killed_after_any_of_its_writes_resumes_to_the_run_never_killed(
    tmp_path, cli_env, whole
):
    whole_dir, points = whole
    # Every kind of write, each at least once.
    for name in ("config.json", "metrics.csv", "tb", "checkpoints/64", "curve.png", "eval.json"):
        assert name in points, points
    assert "checkpoints/64.orbax-checkpoint-tmp-deleted" in points, points
    expected = snapshot(whole_dir)
    assert expected["checkpoints"] == ["128"]

    commands, expected_status = [], []
    for n in range(1, len(points) + 1):
        run_dir = tmp_path / f"killed-{n}"
        proc = rollax("train", "ppo", *RUN, "--run-dir", str(run_dir), env=cli_env, kill_after=n)
        assert proc.returncode == -signal.SIGKILL, proc.stderr
        assert writes(proc.stderr, run_dir) == points[:n]
        commands.append(["resume", str(run_dir)])
        if (run_dir / "config.json").is_file():
            expected_status.append(0)
        else:  # killed before the run existed: no directory, a message, and a new start
            assert not run_dir.exists(), sorted(p.name for p in run_dir.iterdir())
            expected_status.append(2)
            commands.append(["train", "ppo", *RUN, "--run-dir", str(run_dir)])
            expected_status.append(0)
    check_resumed(commands, expected_status, cli_env)
    for n in range(1, len(points) + 1):
        got = snapshot(tmp_path / f"killed-{n}")
        assert got == expected, f"killed after write {n} ({points[n - 1]})"


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_resume_to_a_new_budget_killed_before_its_checkpoint_keeps_that_budget(
    tmp_path, cli_env, whole
):
    # What resume writes before its first checkpoint (config.json with the new budget, the
    # truncated metrics.csv, ...) is its own; the rest is written as by train, tested above.
    longer = ["--total-steps", "192"]
    reference = tmp_path / "longer"
    shutil.copytree(whole[0], reference)
    done = rollax("resume", str(reference), *longer, env=cli_env, kill_after=0)
    assert done.returncode == 0, done.stderr
    points = writes(done.stderr, reference)
    assert points[:2] == ["config.json", "metrics.csv"], points
    expected = snapshot(reference)

    first_checkpoint = points.index("checkpoints/192")
    for n in range(1, first_checkpoint + 1):
        run_dir = tmp_path / f"killed-{n}"
        shutil.copytree(whole[0], run_dir)
        proc = rollax("resume", str(run_dir), *longer, env=cli_env, kill_after=n)
        assert proc.returncode == -signal.SIGKILL, proc.stderr
    killed = [tmp_path / f"killed-{n}" for n in range(1, first_checkpoint + 1)]
    check_resumed([["resume", str(d)] for d in killed], [0] * len(killed), cli_env)
    for n, run_dir in enumerate(killed, 1):
        assert snapshot(run_dir) == expected, f"killed after write {n} ({points[n - 1]})"


# ---------------------------------------------------------------- the pieces, without a run


def test_a_run_directory_appears_with_its_config_or_not_at_all(tmp_path, cli_env):
    # The fault: the directory was made, then config.json written into it; a kill in
    # between (1 of 12 kills of a starting run) left a directory that resume refused.
    script = (
        "import sys; from pathlib import Path; from rollax.runs._run_dir import RunDirectory; "
        "RunDirectory(Path(sys.argv[1])).write_config({'algo': 'ppo'})"
    )
    stale = tmp_path / ".run.tmp-999999999"  # left by a process killed mid-creation
    stale.mkdir()
    run_dir = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-c", script, str(run_dir)],
        env={**cli_env, KILL_AFTER_WRITES: "1"},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert writes(proc.stderr, run_dir) == ["config.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]
    assert json.loads((run_dir / "config.json").read_text()) == {"algo": "ppo"}
    with pytest.raises(FileExistsError):  # a second start never replaces a run
        from rollax._files import create_directory

        create_directory(run_dir, {"config.json": b"{}"})


def test_the_header_is_on_disk_before_any_row(tmp_path):
    # The fault: a kill before the first rows were flushed left an empty metrics.csv, which
    # resume then started with a blank line.
    path = tmp_path / "metrics.csv"
    sink = RunDirectory(tmp_path).open_metrics(["env_steps", "episode_return"])
    assert path.read_text() == "env_steps,episode_return\n"
    sink.write(64, {"env_steps": 64, "episode_return": 1.5})
    assert path.read_text() == "env_steps,episode_return\n64,1.5\n"  # flushed
    sink.close()


@pytest.mark.parametrize(
    "text",
    ["", "env_st", "\n", "\nenv_steps,episode_return\n"],
    ids=["empty", "header cut short", "blank line", "blank line before the header"],
)
def test_a_metrics_file_without_a_whole_header_gets_one(tmp_path, text):
    path = tmp_path / "metrics.csv"
    path.write_text(text)
    sink = RunDirectory(tmp_path).open_metrics(["env_steps", "episode_return"])
    sink.write(64, {"env_steps": 64, "episode_return": 1.5})
    sink.close()
    assert read_metrics(path) == (
        ["env_steps", "episode_return"],
        [{"env_steps": "64", "episode_return": "1.5"}],
    )


def test_resume_drops_a_row_cut_short_and_the_rows_past_its_checkpoint(tmp_path):
    run = RunDirectory(tmp_path)
    # Written by a version before the header was whole (a blank first line), then killed
    # while writing the row of step 192.
    run.metrics.write_text("\nenv_steps,x\n64,1\n128,2\n192,3.2")
    assert read_metrics(run.metrics)[1] == [
        {"env_steps": "64", "x": "1"},
        {"env_steps": "128", "x": "2"},
    ]
    run.truncate_metrics(64)
    assert run.metrics.read_text() == "env_steps,x\n64,1\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("env_steps,x\n64\n", r"metrics.csv, line 2: 1 cells where the header has 2"),
        ("env_steps,x\nsix,1\n", r"metrics.csv: a row's env_steps, 'six', is not a whole"),
        ("steps,x\n64,1\n", r"metrics.csv: its header lacks the column env_steps"),
    ],
)
def test_a_metrics_file_resume_cannot_use_is_a_message_naming_it(tmp_path, text, message):
    run = RunDirectory(tmp_path)
    run.metrics.write_text(text)
    with pytest.raises(ValueError, match=message):
        run.truncate_metrics(64)


def test_a_failed_atomic_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "config.json"
    write_atomic(path, b"old")

    def fail(*args):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        write_atomic(path, b"new")
    assert path.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json"]


def test_resume_removes_the_temporary_files_a_kill_left(tmp_path):
    run = RunDirectory(tmp_path)
    (tmp_path / ".config.tmp-123.json").write_text("{")
    (tmp_path / "config.json").write_text("{}")
    run.discard_temporaries()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json"]


def test_checkpoints_are_whole_or_absent(tmp_path):
    state = {"w": jnp.arange(3.0), "key": jax.random.key(0)}
    ckpt = Checkpointer(tmp_path, max_to_keep=1)
    ckpt.save(1, state, {})
    # What kills leave: a save cut short (Orbax's temporary name) and a deletion cut short
    # (renamed, then partly deleted).
    shutil.copytree(tmp_path / "1", tmp_path / "2.orbax-checkpoint-tmp")
    for f in (tmp_path / "2.orbax-checkpoint-tmp").rglob("*"):
        if f.is_file():
            f.write_bytes(f.read_bytes()[:3])
    shutil.copytree(tmp_path / "1", tmp_path / "0.orbax-checkpoint-tmp-deleted")
    assert ckpt.steps() == [1]
    restored, _ = ckpt.restore(jax.eval_shape(lambda: state))
    assert restored["w"].tolist() == [0.0, 1.0, 2.0]

    ckpt.save(3, state, {})  # and the older one is deleted: renamed, then removed
    assert ckpt.steps() == [3]
    # Killed after a save, before the deletion of the checkpoint it replaces.
    Checkpointer(tmp_path, max_to_keep=2).save(4, state, {})
    assert ckpt.steps() == [3, 4]
    ckpt.tidy()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["4"]
