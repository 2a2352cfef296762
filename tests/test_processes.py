"""Several processes as one run (``jax.distributed`` on loopback), as a user starts them.

Two ``rollax train`` processes with 2 CPU devices each train one seed over 4 shards. They
agree with a single process on 4 devices, only process 0 writes run files (and logs to
W&B), a SIGTERM to one of them stops both at the same step with one complete checkpoint,
``rollax resume`` continues to the bits of a run that never stopped, and the checkpoint of
two processes restores in one.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import jax
import numpy as np
import pytest

from _xla import host_devices
from rollax.runs import load_run

pytestmark = [pytest.mark.timeout(600), pytest.mark.processes]

OPTIONS = [
    "--env", "CartPole-v1", "--num-envs", "8", "--num-steps", "16", "--num-epochs", "2",
    "--num-minibatches", "2", "--hidden-sizes", "16", "16", "--num-shards", "4",
    "--devices", "all", "--total-steps", "8192", "--log-every", "256",
    "--checkpoint-every", "4096", "--eval-episodes", "0", "--no-progress",
]  # fmt: skip


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    # A compilation cache of the module's own: a process killed from outside may die in the
    # middle of writing a cache entry, which no other test should read.
    env = dict(os.environ)
    env["ROLLAX_CACHE_DIR"] = str(tmp_path_factory.mktemp("jax-cache"))
    env["JAX_PLATFORMS"] = "cpu"
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(command: list[str], env: dict, devices: int, cluster: list[str]) -> subprocess.Popen:
    env = host_devices(env, devices)
    return subprocess.Popen(
        [sys.executable, "-m", "rollax", *command, *cluster],
        env=env,
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def two_processes(command: list[str], env: dict) -> list[subprocess.Popen]:
    port = free_port()
    cluster = ["--coordinator", f"127.0.0.1:{port}", "--num-processes", "2"]
    timeout = ["--coordinator-timeout", "120"]
    return [start(command, env, 2, [*cluster, "--process-id", str(i), *timeout]) for i in range(2)]


def finish(procs: list[subprocess.Popen]) -> list[tuple[int, str]]:
    out = []
    for p in procs:
        _, err = p.communicate(timeout=400)
        out.append((p.returncode, err))
    return out


PBT = ["--num-seeds", "2", "--pbt-interval", "2048", "--pbt-explore", "learning_rate=1e-4,1e-2"]
"""Population-based training over two members (a step every 2,048 of the 8,192 steps)."""


def population(run_dir: Path) -> list[dict]:
    """The population's history (population.jsonl), one event per line."""
    lines = (run_dir / "population.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def final_params(run_dir: Path) -> list[np.ndarray]:
    return [np.asarray(x) for x in jax.tree.leaves(load_run(run_dir).state.params)]


def rows(run_dir: Path) -> list[dict[str, str]]:
    with (run_dir / "metrics.csv").open(newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.slow
@pytest.mark.extra("wandb")
def test_two_processes_train_stop_together_and_resume_bit_for_bit(tmp_path, env):
    # A population of two members (PBT), so that its steps are made across processes too.
    whole, stopped, single = tmp_path / "whole", tmp_path / "stopped", tmp_path / "single"

    # An uninterrupted run of two processes, logged to W&B (offline).
    wandb = {f"WANDB_{k}_DIR": str(tmp_path / f"wandb-{k.lower()}") for k in ("CONFIG", "CACHE")}
    tracked = {**env, **wandb, "WANDB_MODE": "offline", "WANDB_SILENT": "true"}
    command = ["train", "ppo", *OPTIONS, *PBT, "--run-dir", str(whole), "--wandb", "rollax-tests"]
    results = finish(two_processes(command, tracked))
    assert [code for code, _ in results] == [0, 0], results[0][1][-2000:] + results[1][1][-2000:]
    # Only process 0 wrote run files: one TensorBoard file, each metrics row once; and only
    # it logged to W&B: one offline run, sent every row.
    assert len(list((whole / "tb").iterdir())) == 1
    steps = [int(r["env_steps"]) for r in rows(whole)]
    assert steps == sorted(set(steps)) and steps[-1] == 8192
    assert len(list((whole / "wandb").glob("offline-run-*"))) == 1
    assert json.loads((whole / "trackers.json").read_text())["wandb"]["logged_to"] == 8192

    # The same run in one process on 4 devices agrees (reduction order aside).
    one = start(["train", "ppo", *OPTIONS, *PBT, "--run-dir", str(single)], env, 4, [])
    code, err = finish([one])[0]
    assert code == 0, err[-2000:]
    for a, b in zip(final_params(whole), final_params(single), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-4)
    decisions = population(whole)
    assert [e["event"] for e in decisions] == ["start", "exploit", "exploit", "exploit"]
    assert [e.get("source") for e in population(single)] == [e.get("source") for e in decisions]

    # SIGTERM to process 1 only, once training is under way: both stop at the same step.
    procs = two_processes(["train", "ppo", *OPTIONS, *PBT, "--run-dir", str(stopped)], env)
    deadline = time.monotonic() + 300
    while not (stopped / "metrics.csv").is_file() or len(rows(stopped)) < 2:
        assert time.monotonic() < deadline and procs[0].poll() is None
        time.sleep(0.05)
    procs[1].send_signal(signal.SIGTERM)
    results = finish(procs)
    assert [code for code, _ in results] == [128 + signal.SIGTERM] * 2, results[0][1][-2000:]
    assert "received by another process" in results[0][1]
    saved = sorted(int(p.name) for p in (stopped / "checkpoints").iterdir() if p.name.isdigit())
    assert saved and saved[-1] < 8192
    assert load_run(stopped).env_steps == saved[-1]  # complete: it restores

    # Two processes resume it to the bits of the run that never stopped.
    results = finish(two_processes(["resume", str(stopped)], env))
    assert [code for code, _ in results] == [0, 0], results[0][1][-2000:]
    for a, b in zip(final_params(whole), final_params(stopped), strict=True):
        np.testing.assert_array_equal(a, b)
    assert population(stopped) == decisions  # the same steps, from one history


def test_bad_cluster_settings_are_messages(env):
    def run(*cluster: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "rollax", "train", "ppo", "--no-progress", *cluster],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip

    out = run("--coordinator", "127.0.0.1:1", "--num-processes", "2", "--process-id", "2")
    assert out.returncode == 2 and "--process-id must lie in [0, 2)" in out.stderr
    out = run("--num-processes", "2", "--process-id", "1", "--coordinator", "localhost")
    assert out.returncode == 2 and "--coordinator must be HOST:PORT" in out.stderr
    # Nobody listens there: the process gives up after its timeout, with a message.
    port = str(free_port())
    out = run("--coordinator", f"127.0.0.1:{port}", "--num-processes", "2", "--process-id", "1",
              "--coordinator-timeout", "5")  # fmt: skip
    assert out.returncode == 2 and "Could not join the run's 2 processes" in out.stderr


@pytest.mark.slow
@pytest.mark.timeout(480)
def test_a_killed_process_stops_the_other_with_a_message_and_the_run_resumes(tmp_path, env):
    """SIGKILL to one process: the other stops within the heartbeat timeout, saying so.

    Unsupervised (before rollax ran a multi-process run in a child), the survivor died 30 s
    after the kill (92 s with JAX's default heartbeat timeout) by SIGABRT, with a C++ stack
    trace and no word on the checkpoint or on how to go on.
    """
    run_dir = tmp_path / "killed"
    long = [*OPTIONS, "--total-steps", "1048576", "--checkpoint-every", "1024"]  # last one wins
    long += ["--heartbeat-timeout", "15"]  # half the default: the survivor waits that long
    procs = two_processes(["train", "ppo", *long, "--run-dir", str(run_dir)], env)
    checkpoints = run_dir / "checkpoints"
    deadline = time.monotonic() + 300
    while not checkpoints.is_dir() or not any(p.name.isdigit() for p in checkpoints.iterdir()):
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs)
        time.sleep(0.05)
    procs[1].kill()  # the process the user started: its training child dies with it
    killed = time.monotonic()
    _, err = procs[0].communicate(timeout=150)
    elapsed = time.monotonic() - killed
    procs[1].communicate(timeout=60)
    print(f"the survivor stopped {elapsed:.1f} s after the kill")
    assert procs[0].returncode == 128 + signal.SIGABRT, err[-3000:]
    assert "process 1 of the run's 2 vanished" in err, err[-3000:]
    step = max(int(p.name) for p in checkpoints.iterdir() if p.name.isdigit())
    assert f"Last complete checkpoint: step {step} " in err, err[-3000:]

    # The commands the message gives resume the run with two fresh processes.
    commands = [line.split() for line in err.splitlines() if line.startswith("  rollax resume")]
    assert [c[-1] for c in commands] == ["0", "1"] and commands[0][2] == str(run_dir), commands
    assert all(" --heartbeat-timeout 15 " in " ".join(c) for c in commands), commands
    total = ["--total-steps", str(step + 512)]
    procs = [start([*c[1:], *total], env, 2, []) for c in commands]
    results = finish(procs)
    assert [code for code, _ in results] == [0, 0], results[0][1][-2000:] + results[1][1][-2000:]
    assert load_run(run_dir).env_steps == step + 512


def test_the_message_of_a_lost_process(tmp_path):
    """What the supervisor reads in JAX's messages, and what it says (no processes here)."""
    from rollax._supervisor import failure_message, resume_commands, vanished_process
    from rollax.runs import Cluster

    heartbeat = "UNAVAILABLE: Task 3 heartbeat timeout. This indicates that the remote task"
    assert vanished_process(heartbeat) == 3  # seen by process 0, which hosts the service
    lost_service = "UNAVAILABLE: Failed to send RPC to coordination service. Either the leader"
    assert vanished_process(lost_service) == 0  # seen by the others
    assert vanished_process("Segmentation fault") is None

    cluster = Cluster("host0:1234", num_processes=4, process_id=2)
    message = failure_message("resume", -6, heartbeat, cluster, tmp_path)
    assert message.startswith("rollax resume: process 3 of the run's 4 vanished")
    assert "process 2 was ended by SIGABRT" in message
    assert "holds no complete checkpoint yet" in message and "  rollax resume" not in message
    assert "the training of process 2 exited with 1" in failure_message(
        "train", 1, "", cluster, tmp_path
    )
    assert resume_commands(tmp_path, cluster)[3] == (
        f"rollax resume {tmp_path} --coordinator host0:1234 --num-processes 4 --process-id 3"
    )
    from_env = Cluster(from_environment=True, heartbeat_timeout=60)
    assert resume_commands(tmp_path, from_env) == [
        f"rollax resume {tmp_path} --heartbeat-timeout 60 --cluster-from-env"
    ]
