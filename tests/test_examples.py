"""The examples run as a user runs them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from _xla import xla_defaults

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.processes  # each example runs as a script


@pytest.mark.slow
@pytest.mark.extra("torch", "gymnasium")
def test_torch_ppo_through_the_gymnasium_adapter_learns_cartpole():
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "examples" / "torch_ppo_gymnasium.py"),
            *"--total-steps 32768 --eval-episodes 16 --seed 1".split(),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    last = result.stdout.strip().splitlines()[-1]
    assert last.startswith("eval_return=")
    assert float(last.removeprefix("eval_return=")) >= 100, result.stdout


@pytest.mark.slow
def test_single_file_dqn_learns_cartpole():
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "dqn_cartpole.py"), "--eval-episodes", "16"],
        env=xla_defaults(os.environ),
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    last = result.stdout.strip().splitlines()[-1]
    assert last.startswith("eval_return=")
    assert float(last.removeprefix("eval_return=")) >= 475, result.stdout


@pytest.mark.slow
def test_single_file_sac_learns_pendulum():
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "sac_pendulum.py"), "--eval-episodes", "16"],
        env=xla_defaults(os.environ),
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    last = result.stdout.strip().splitlines()[-1]
    assert last.startswith("eval_return=")
    assert float(last.removeprefix("eval_return=")) >= -250, result.stdout


@pytest.mark.slow
def test_single_file_recurrent_ppo_trains_both_policies_and_plays_an_episode():
    # A short budget: that the example's preset (trained through the same make_ppo) solves
    # StatelessCartPole where feed-forward PPO cannot is tests/test_recurrent_ppo.py's claim,
    # at the full budget; this checks that the file runs as a user runs it.
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "recurrent_ppo.py"), "--total-steps", "16384",
         "--eval-episodes", "4"],
        capture_output=True, text=True, timeout=600, check=True,
    )  # fmt: skip
    lines = result.stdout.strip().splitlines()
    assert any("feed-forward, 4 frames: eval return" in line for line in lines), result.stdout
    assert "one episode by hand" in result.stdout
    assert lines[-1].startswith("eval_return=")
    assert float(lines[-1].removeprefix("eval_return=")) > 0, result.stdout


@pytest.mark.slow
def test_maze_curriculum_raises_the_goal_distance_in_a_run_directory(tmp_path):
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "maze_curriculum.py"), "--total-steps",
         "65536", "--eval-episodes", "8", "--run-dir", str(tmp_path / "run")],
        capture_output=True, text=True, timeout=600, check=True,
    )  # fmt: skip
    assert "min_goal_distance -> 2" in result.stdout  # the first stage is solved at once
    assert result.stdout.strip().splitlines()[-1].startswith("eval_return=")
    assert (tmp_path / "run" / "metrics.csv").is_file()
    assert any((tmp_path / "run" / "checkpoints").iterdir())


@pytest.mark.slow
def test_an_agent_written_on_the_on_policy_driver_learns_cartpole_and_resumes(tmp_path):
    # examples/a2c_cartpole.py, the page docs/custom-agents.md builds: A2C trained in a run
    # directory for half the budget, resumed to the whole, evaluated greedily per seed.
    run_dir = tmp_path / "a2c"
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "a2c_cartpole.py"), "--run-dir", str(run_dir)],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    per_seed = result.stdout.strip().splitlines()[-2].removeprefix("greedy return per seed: ")
    returns = [float(r) for r in per_seed.split(", ")]
    assert len(returns) == 4 and sum(r >= 475 for r in returns) >= 2, result.stdout
    assert max(int(p.name) for p in (run_dir / "checkpoints").iterdir()) == 131_072
