"""The command line, run as a user runs it: in a subprocess, writing a real run directory."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import imageio.v3 as iio
import jax
import numpy as np
import pytest

from _commands import rollax_in_one_process
from _signals import signal_after_rows
from rollax._files import KILL_AFTER_WRITES
from rollax.runs import draw_runs, load_run

TINY = [
    "--num-envs", "4", "--num-steps", "16", "--num-epochs", "2", "--num-minibatches", "2",
    "--hidden-sizes", "16", "16", "--no-progress",
]  # fmt: skip
TINY_SAC = [
    "--env", "Pendulum-v1", "--num-envs", "2", "--buffer-size", "2000", "--learning-starts",
    "200", "--batch-size", "32", "--hidden-sizes", "16", "--no-progress",
]  # fmt: skip
TINY_DQN = [
    "--num-envs", "4", "--buffer-size", "4000", "--learning-starts", "400", "--batch-size",
    "32", "--gradient-steps", "1", "--hidden-sizes", "16", "--no-progress",
]  # fmt: skip


# One worker runs the module (make test's --dist loadgroup keeps a group on one worker).
pytestmark = [pytest.mark.xdist_group("cli"), pytest.mark.processes]


@pytest.fixture(scope="module")
def cli_env():
    """Environment of the subprocesses (the test run's compilation cache: tests/conftest.py)."""
    env = dict(os.environ)
    env["JAX_PLATFORMS"] = "cpu"
    return env


def rollax(*args: str, env: dict, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, "-m", "rollax", *args], env=env, capture_output=True, text=True
    )
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def metrics(run_dir: Path) -> list[dict[str, str]]:
    with (run_dir / "metrics.csv").open(newline="") as f:
        return list(csv.DictReader(f))


def test_train_resume_and_eval_write_a_complete_run_directory(tmp_path, cli_env):
    run_dir = tmp_path / "run"
    args = ["--run-dir", str(run_dir), "--total-steps", "2048", "--log-every", "256"]
    rollax("train", "ppo", "--env", "CartPole-v1", *TINY, *args,
           "--checkpoint-every", "1024", "--eval-episodes", "4", env=cli_env)  # fmt: skip

    config = json.loads((run_dir / "config.json").read_text())
    assert config["env"] == "CartPole-v1" and config["config"]["hidden_sizes"] == [16, 16]
    rows = metrics(run_dir)
    assert [int(r["env_steps"]) for r in rows] == list(range(256, 2049, 256))
    assert float(rows[-1]["steps_per_second"]) > 0
    assert list((run_dir / "tb").glob("events.out.tfevents.*"))
    assert iio.imread(run_dir / "curve.png").ndim == 3
    assert sorted(int(p.name) for p in (run_dir / "checkpoints").iterdir()) == [1024, 2048]
    result = json.loads((run_dir / "eval.json").read_text())
    assert result["env_steps"] == 2048 and len(result["stochastic"]["per_seed_mean"]) == 1

    rollax("resume", str(run_dir), "--total-steps", "3072", env=cli_env)
    rows = metrics(run_dir)
    assert [int(r["env_steps"]) for r in rows] == list(range(256, 3073, 256))
    assert json.loads((run_dir / "config.json").read_text())["config"]["total_steps"] == 3072

    # Resuming a finished run is a no-op that exits cleanly (no second checkpoint of a step).
    rollax("resume", str(run_dir), env=cli_env)
    assert len(metrics(run_dir)) == 12

    video = tmp_path / "episode.gif"
    out = rollax("eval", str(run_dir), "--episodes", "4", "--video", str(video), env=cli_env)
    printed = json.loads(out.stdout)
    assert printed["episodes_per_seed"] == 4 and printed["env_steps"] == 3072
    frames = iio.imread(video, index=None)
    assert frames.ndim == 4 and frames.shape[0] > 1 and frames.shape[-1] in (3, 4)


@pytest.mark.parametrize(
    ("algo", "options", "total_steps", "log_every"),
    [
        ("ppo", TINY, 4096, 512),
        ("pqn", TINY, 4096, 512),
        ("dqn", TINY_DQN, 8000, 1000),
        ("sac", TINY_SAC, 4000, 400),
        ("td3", TINY_SAC, 4000, 400),
    ],
)
def test_sigterm_saves_a_checkpoint_and_resuming_matches_an_uninterrupted_run(
    tmp_path, cli_env, algo, options, total_steps, log_every
):
    # The SIGTERM comes right after the third row (the process sends it to itself at that
    # write: rollax._files), so a short run is stopped mid-way every time. A signal from
    # outside, arriving while a compiled chunk runs, is test_sigint_also_saves_and_exits_cleanly.
    total = ["--total-steps", str(total_steps), "--log-every", str(log_every),
             "--checkpoint-every", str(total_steps), "--eval-episodes", "0"]  # fmt: skip
    whole_dir, cut_dir = tmp_path / "whole", tmp_path / "cut"
    whole = rollax("train", algo, *options, *total, "--run-dir", str(whole_dir),
                   env={**cli_env, KILL_AFTER_WRITES: "0"})  # fmt: skip
    written = re.findall(r"^rollax: write (\d+): (.*)$", whole.stderr, re.MULTILINE)
    third_row = [int(n) for n, path in written if path.endswith("metrics.csv")][3]  # header

    stop = {**cli_env, KILL_AFTER_WRITES: f"SIGTERM:{third_row}"}
    cut = rollax("train", algo, *options, *total, "--run-dir", str(cut_dir), env=stop, check=False)
    assert cut.returncode == 128 + signal.SIGTERM, cut.stderr
    assert "SIGTERM received: saved a checkpoint at step" in cut.stderr
    stopped_at = int(metrics(cut_dir)[-1]["env_steps"])
    assert stopped_at == 3 * log_every
    assert [int(p.name) for p in (cut_dir / "checkpoints").iterdir()] == [stopped_at]

    rollax("resume", str(cut_dir), env=cli_env)
    whole, cut = load_run(whole_dir).state, load_run(cut_dir).state
    assert int(cut.env_steps) == int(whole.env_steps) == total_steps
    for a, b in zip(jax.tree.leaves(whole.params), jax.tree.leaves(cut.params), strict=True):
        np.testing.assert_array_equal(a, b)
    assert [r["episode_return"] for r in metrics(cut_dir)] == [
        r["episode_return"] for r in metrics(whole_dir)
    ]


def test_recurrent_dqn_trains_resumes_and_evaluates_from_the_command_line(tmp_path, cli_env):
    # The recurrent learner (R2D2) is DQN with --recurrent: the same run directory, resume
    # with its carries, and a video whose policy threads its carry through the episode.
    run_dir = tmp_path / "dqn"
    rollax("train", "dqn", "--env", "StatelessCartPole-v1", *TINY_DQN, "--recurrent", "gru",
           "--cell-size", "8", "--sequence-length", "4", "--burn-in", "2", "--total-steps",
           "800", "--log-every", "200", "--eval-episodes", "2", "--run-dir", str(run_dir),
           env=cli_env)  # fmt: skip
    config = json.loads((run_dir / "config.json").read_text())
    assert config["algo"] == "dqn" and config["config"]["buffer_size"] == 4000
    assert config["config"]["recurrent"] == "gru" and config["config"]["burn_in"] == 2
    rows = metrics(run_dir)
    assert [int(r["env_steps"]) for r in rows] == [200, 400, 600, 800]
    assert rows[0]["td_loss"] == "0" and float(rows[-1]["td_loss"]) > 0  # learning from 400
    rollax("resume", str(run_dir), "--total-steps", "1200", env=cli_env)
    assert [int(r["env_steps"]) for r in metrics(run_dir)][-1] == 1200
    video = tmp_path / "episode.gif"
    out = rollax("eval", str(run_dir), "--episodes", "3", "--video", str(video), env=cli_env)
    assert json.loads(out.stdout)["env_steps"] == 1200
    assert iio.imread(video, index=None).ndim == 4


def test_sac_trains_resumes_and_evaluates_from_the_command_line(tmp_path, cli_env):
    run_dir = tmp_path / "sac"
    rollax("train", "sac", *TINY_SAC, "--total-steps", "400", "--log-every", "200",
           "--eval-episodes", "2", "--run-dir", str(run_dir), env=cli_env)  # fmt: skip
    config = json.loads((run_dir / "config.json").read_text())
    assert config["algo"] == "sac" and config["config"]["buffer_size"] == 2000
    rows = metrics(run_dir)
    assert [int(r["env_steps"]) for r in rows] == [200, 400]
    assert {"critic_loss", "actor_loss", "alpha", "entropy"} <= set(rows[0])
    rollax("resume", str(run_dir), "--total-steps", "600", env=cli_env)
    assert [int(r["env_steps"]) for r in metrics(run_dir)][-1] == 600
    out = rollax("eval", str(run_dir), "--episodes", "2", env=cli_env)
    assert json.loads(out.stdout)["env_steps"] == 600


TINY_RUNS = {
    "ppo": (["--env", "CartPole-v1", *TINY], 128),
    "pqn": (["--env", "CartPole-v1", *TINY], 128),
    "dqn": (["--env", "CartPole-v1", *TINY_DQN], 400),
    "sac": (TINY_SAC, 200),
    "td3": (TINY_SAC, 200),
}
"""Each agent's options for a run of a few seconds, and the steps of its half."""
PROGRAMS = ("jit(init_global)", "jit(run_iterations)", "jit(run_episodes)")
"""A run's programs: init, training, and the final evaluation (both policies in one)."""


@pytest.mark.parametrize("algo", sorted(TINY_RUNS))
def test_each_program_compiles_once_and_later_processes_read_them_from_the_cache(
    algo, tmp_path, cli_env
):
    # --compile-only fills a cache of its own; a run in a new process then reads each of its
    # programs from it, once, and a resume in another compiles none of the training ones.
    # Every program kept, as for a user (the suite keeps those of 0.5 s and more).
    env = {**cli_env, "ROLLAX_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", None)
    options, half = TINY_RUNS[algo]
    run_dir = str(tmp_path / "run")
    train = ["train", algo, *options, "--total-steps", str(half), "--log-every", str(half),
             "--eval-episodes", "2", "--run-dir", run_dir]  # fmt: skip

    (compiled,) = rollax_in_one_process([[*train, "--compile-only"]], env)
    assert compiled["status"] == 0, compiled["stderr"]
    assert "3 programs in the compilation cache" in compiled["stderr"]
    assert not Path(run_dir).exists()
    assert sorted(p for p in compiled["programs"] if p in PROGRAMS) == sorted(PROGRAMS)

    (trained,) = rollax_in_one_process([train], env)
    assert trained["status"] == 0, trained["stderr"]
    assert sorted(p for p in trained["programs"] if p in PROGRAMS) == sorted(PROGRAMS)
    assert sorted(p for p in trained["cached"] if p in PROGRAMS) == sorted(PROGRAMS)

    (resumed,) = rollax_in_one_process([["resume", run_dir, "--total-steps", str(2 * half)]], env)
    assert resumed["status"] == 0, resumed["stderr"]
    assert sorted(p for p in resumed["programs"] if p in PROGRAMS) == sorted(PROGRAMS[1:])
    assert sorted(p for p in resumed["cached"] if p in PROGRAMS) == sorted(PROGRAMS[1:])


def test_sigint_also_saves_and_exits_cleanly(tmp_path, cli_env):
    run_dir = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "rollax", "train", "ppo", *TINY, "--total-steps", "1048576",
         "--log-every", "512", "--run-dir", str(run_dir)],
        env=cli_env, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    stderr = signal_after_rows(proc, run_dir / "metrics.csv", rows=2, signum=signal.SIGINT)
    assert "Traceback" not in stderr
    assert load_run(run_dir).env_steps == int(metrics(run_dir)[-1]["env_steps"])


BAD_INPUT = [
    (["train", "ppo", "--env", "CartPol-v1"], "Unknown environment id 'CartPol-v1'"),
    (["train", "ppo", "--total-steps", "1000"], "use 512 or 1024"),
    (["train", "ppo", "--num-minibatches", "7"], "num_minibatches=7 must divide"),
    (["train", "dqn", "--env", "Pendulum-v1"], "DQN chooses among discrete actions"),
    (["train", "sac", "--env", "CartPole-v1"], "SAC acts in a 1-D box"),
    (["resume", "/nonexistent/run"], "holds no run"),
    (["eval", "/nonexistent/run"], "holds no run"),
    (["plot", str(Path(__file__).parent)], "holds no run (no config.json)"),
    (["plot", "/nonexistent/run"], "RUN_DIR '/nonexistent/run' does not exist"),
    (["plot"], "the following arguments are required: RUN_DIR"),
    (["plot", ".", "--x", "wall"], "argument --x: invalid choice: 'wall'"),
    (["plot", ".", "--stat", "median"], "argument --stat: invalid choice: 'median'"),
]
"""Commands refused with a message and status 2, and the message."""


def _as_written_by_0_1_0(config: dict) -> None:
    """PPO's config as rollax 0.1.0 stored it: ``anneal_lr``, no optimizer fields."""
    for name in ("optimizer", "lr_schedule", "warmup_fraction", "weight_decay", "momentum"):
        config.pop(name)
    config["anneal_lr"] = True


OLD_CONFIGS = {
    "unknown field": (
        lambda c: c["config"].update(gradient_penalty=1.0),
        "field(s) 'gradient_penalty' that",
    ),
    "missing field": (
        lambda c: c["run"].pop("keep_checkpoints"),
        "lacks field(s) 'keep_checkpoints'",
    ),
    "wrong type": (
        lambda c: c["config"].update(num_envs="8"),
        "field 'num_envs' must be an integer, got '8'",
    ),
    "unknown algorithm": (lambda c: c.update(algo="a2c"), "Unknown algorithm 'a2c'"),
    "rollax 0.1.0": (
        lambda c: _as_written_by_0_1_0(c["config"]),
        "has no optimizer field: it was written by rollax 0.1.0, before agents named their "
        "optimizer (it has anneal_lr)",
    ),
}
"""Edits of a run's config.json, as another version might have written it, and the message."""


@pytest.fixture(scope="module")
def refused(tmp_path_factory, cli_env) -> dict[tuple[str, ...], dict]:
    """What each command of :data:`BAD_INPUT`, and ``resume`` and ``eval`` of a run directory
    per :data:`OLD_CONFIGS` edit, returned and wrote to stderr (keyed by the command), and
    those directories (keyed by ``("old config", name)``). One process runs them all (each
    would spend about 2 s starting), the first through ``python -m rollax`` itself."""
    import dataclasses

    from rollax.agents.ppo import PPOConfig
    from rollax.runs import RunConfig

    commands = [args for args, _ in BAD_INPUT[1:]]
    dirs = {}
    for name, (edit, _) in OLD_CONFIGS.items():
        run_dir = tmp_path_factory.mktemp(name.replace(" ", "-"))
        config = {
            "algo": "ppo",
            "env": "CartPole-v1",
            "config": dataclasses.asdict(PPOConfig()),
            "run": dataclasses.asdict(RunConfig(run_dir=str(run_dir))),
        }
        edit(config)
        (run_dir / "config.json").write_text(json.dumps(config))
        commands += [["resume", str(run_dir)], ["eval", str(run_dir)]]
        dirs[("old config", name)] = str(run_dir)
    said = rollax_in_one_process(commands, cli_env)
    results = {tuple(c): r for c, r in zip(commands, said, strict=True)}
    first = rollax(*BAD_INPUT[0][0], env=cli_env, check=False)  # through python -m rollax
    results[tuple(BAD_INPUT[0][0])] = {"status": first.returncode, "stderr": first.stderr}
    return {**results, **dirs}


@pytest.mark.parametrize(("args", "message"), BAD_INPUT)
def test_bad_input_is_a_message_and_status_2(args, message, refused):
    result = refused[tuple(args)]
    assert result["status"] == 2
    assert message in result["stderr"] and "Traceback" not in result["stderr"]


def test_plot_overlays_runs_with_the_spread_of_their_seeds(tmp_path, cli_env):
    # Both runs and both plots in one process (the learning rate is data: one program).
    runs = [tmp_path / "base", tmp_path / "fast"]
    out, iqm = tmp_path / "plots" / "curves.png", tmp_path / "iqm.svg"
    commands = [
        ["train", "ppo", *TINY, "--num-seeds", "2", "--total-steps", "512", "--log-every",
         "128", "--eval-episodes", "0", "--run-dir", str(run_dir), *extra]
        for run_dir, extra in zip(runs, [[], ["--learning-rate", "0.001"]], strict=True)
    ]  # fmt: skip
    commands.append(["plot", *map(str, runs), "--out", str(out), "--x", "time"])
    commands.append(["plot", *map(str, runs), "--out", str(iqm), "--stat", "iqm"])
    results = rollax_in_one_process(commands, cli_env)
    assert [r["status"] for r in results] == [0, 0, 0, 0], results
    rows = [r for r in metrics(runs[0]) if r["episode_return"]]
    assert rows, "no episode ended"
    for row in rows:  # each seed's return is logged; episode_return is their mean
        seeds = [float(row[k]) for k in ("episode_return_seed0", "episode_return_seed1") if row[k]]
        assert float(row["episode_return"]) == pytest.approx(np.mean(seeds), abs=1e-3)

    assert f"Wrote {out} (2 runs)." in results[2]["stderr"]
    assert iio.imread(out).ndim == 3
    ax = draw_runs(runs, x="time").axes[0]  # what the command drew, as a figure
    assert len(ax.lines) == 2 and len(ax.collections) == 2  # a mean and a band per run
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "base (PPO, CartPole-v1, 2 seeds)",
        "fast (PPO, CartPole-v1, 2 seeds)",
    ]
    assert ax.get_xlabel().startswith("wall-clock training time")
    assert draw_runs(runs).axes[0].get_xlabel() == "environment steps per seed"
    assert f"Wrote {iqm} (2 runs)." in results[3]["stderr"]
    assert "95% bootstrap CI over seeds" in iqm.read_text()


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory, cli_env) -> Path:
    """A finished tiny PPO run (512 steps, no evaluation), trained once for the module's
    tests; each test that changes it works on a copy."""
    run_dir = tmp_path_factory.mktemp("tiny") / "run"
    rollax("train", "ppo", *TINY, "--total-steps", "512", "--eval-episodes", "0",
           "--run-dir", str(run_dir), env=cli_env)  # fmt: skip
    return run_dir


@pytest.mark.extra("video")  # the .mp4
def test_an_existing_run_is_not_overwritten_and_video_formats_are_checked(
    tmp_path, cli_env, tiny_run
):
    run_dir = tmp_path / "run"
    shutil.copytree(tiny_run, run_dir)
    before = (run_dir / "metrics.csv").read_bytes()
    proc = rollax("train", "ppo", *TINY, "--total-steps", "512", "--run-dir", str(run_dir),
                  env=cli_env, check=False)  # fmt: skip
    assert proc.returncode == 2 and "already holds a run" in proc.stderr
    assert (run_dir / "metrics.csv").read_bytes() == before
    proc = rollax("eval", str(run_dir), "--video", str(tmp_path / "x.avi"), env=cli_env,
                  check=False)  # fmt: skip
    assert proc.returncode == 2 and "must end in .gif or .mp4" in proc.stderr
    mp4 = tmp_path / "episode.mp4"
    rollax("eval", str(run_dir), "--episodes", "1", "--video", str(mp4), env=cli_env)
    # Checked by its header: decoding it here would start ffmpeg from a process running JAX.
    data = mp4.read_bytes()
    assert data[4:8] == b"ftyp" and len(data) > 1000


def test_a_run_stopped_before_its_first_checkpoint_resumes_from_the_start(
    tmp_path, cli_env, tiny_run
):
    # What a run killed right after writing its config leaves: config.json alone.
    stopped = tmp_path / "stopped"
    stopped.mkdir()
    config = json.loads((tiny_run / "config.json").read_text())
    config["run"]["run_dir"] = str(stopped)
    (stopped / "config.json").write_text(json.dumps(config))
    rollax("resume", str(stopped), env=cli_env)
    assert int(metrics(stopped)[-1]["env_steps"]) == 512
    assert metrics(stopped) and load_run(stopped).env_steps == 512


@pytest.mark.parametrize("name", OLD_CONFIGS)
def test_a_config_from_another_version_is_a_message_and_status_2(name, refused):
    message = OLD_CONFIGS[name][1]
    run_dir = refused[("old config", name)]
    for command in ("resume", "eval"):
        result = refused[(command, run_dir)]
        assert result["status"] == 2, result["stderr"]
        assert message in result["stderr"] and "Traceback" not in result["stderr"]
    assert sorted(p.name for p in Path(run_dir).iterdir()) == ["config.json"]  # nothing written


def test_a_diverging_run_stops_with_a_message_and_keeps_its_last_good_checkpoint(tmp_path, cli_env):
    # An absurd learning rate: the first update is finite, the second overflows the values.
    run_dir = tmp_path / "run"
    proc = rollax("train", "ppo", "--num-envs", "4", "--num-steps", "16", "--num-epochs", "1",
                  "--num-minibatches", "1", "--hidden-sizes", "16", "16", "--no-progress",
                  "--learning-rate", "1e30", "--total-steps", "640", "--log-every", "64",
                  "--checkpoint-every", "64", "--keep-checkpoints", "1",
                  "--run-dir", str(run_dir), env=cli_env, check=False)  # fmt: skip
    assert proc.returncode == 3, proc.stderr
    assert "Training diverged between environment steps 64 and 128" in proc.stderr
    assert "value_loss=inf" in proc.stderr and "Traceback" not in proc.stderr
    # The diverged state was never saved, so it did not push the good one out.
    assert [p.name for p in (run_dir / "checkpoints").iterdir()] == ["64"]
    run = load_run(run_dir)
    assert run.env_steps == 64
    assert all(np.isfinite(np.asarray(x)).all() for x in jax.tree.leaves(run.state.params))


@pytest.mark.extra("gymnax")
def test_video_of_an_environment_without_render_is_refused_before_evaluating(tmp_path):
    from rollax.runs import check_video_path

    (tmp_path / "config.json").write_text(json.dumps({"env": "gymnax/CartPole-v1"}))
    with pytest.raises(ValueError, match="gymnax/CartPole-v1 cannot render"):
        check_video_path(tmp_path / "x.gif", tmp_path)


def test_pixel_training_and_a_video_of_what_the_agent_saw(tmp_path, cli_env):
    run_dir = tmp_path / "pixels"
    rollax(
        "train", "ppo", "--env", "PixelCartPole-v1", *TINY, "--total-steps", "128",
        "--augment-pixels", "--actor-keys", "pixels/fixed", "--run-dir", str(run_dir),
        env=cli_env,
    )  # fmt: skip
    config = json.loads((run_dir / "config.json").read_text())
    assert config["config"]["augment_pixels"] and config["config"]["actor_keys"] == ["pixels/fixed"]
    video = tmp_path / "seen.gif"
    rollax("eval", str(run_dir), "--episodes", "2", "--video", str(video), env=cli_env)
    frames = iio.imread(video)
    # The 120 x 288 scene, then the agent's 16 x 64 camera scaled by 7 (and a 2-pixel gap).
    assert frames.shape[1:] == (120, 288 + 2 + 64 * 7, 3)


@pytest.mark.extra("gymnax")
def test_minatar_trains_from_its_board_and_the_video_shows_the_board(tmp_path, cli_env):
    run_dir = tmp_path / "minatar"
    rollax(
        "train", "ppo", "--env", "gymnax/Breakout-MinAtar", *TINY, "--total-steps", "128",
        "--eval-episodes", "0", "--run-dir", str(run_dir), env=cli_env,
    )  # fmt: skip
    config = json.loads((run_dir / "config.json").read_text())
    assert config["config"]["gamma"] == 0.999  # the preset, under the command line's sizes
    video = tmp_path / "board.gif"
    rollax("eval", str(run_dir), "--episodes", "1", "--video", str(video), env=cli_env)
    frames = iio.imread(video)
    # No renderer: the 10x10 board alone, scaled by 10, each object kind in its colour.
    assert frames.shape[1:] == (100, 102, 3)
    colours = {tuple(c) for c in frames[0, :, 2:].reshape(-1, 3)}
    assert (0, 0, 0) in colours and len(colours) >= 3
