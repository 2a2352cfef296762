"""Agents trained on host environments (rollax.host) as on rollax's own: run directories,
checkpoints, resumes and the command line, with a user's own Python environment."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import jax
import numpy as np
import pytest

from rollax import runs
from rollax._files import KILL_AFTER_WRITES
from rollax.agents.ppo import PPOConfig, make_ppo
from rollax.runs._run_dir import read_metrics
from rollax.runs._video import record_episode

pytestmark = pytest.mark.extra("gymnasium")

TINY = dict(num_envs=4, num_steps=16, num_epochs=1, num_minibatches=1, hidden_sizes=(8,),
            num_seeds=2)  # fmt: skip
"""Two seeds of 4 environments, 64 steps per iteration."""

WALK = '''
import os

import gymnasium
import numpy as np


class Walk(gymnasium.Env):
    """A walk on a line: +1 or -1 a step, reward for the right end, cut after 20 steps."""

    observation_space = gymnasium.spaces.Box(-10, 10, (1,), np.float32)
    action_space = gymnasium.spaces.Discrete(2)

    def __init__(self):
        pids = os.environ.get("WALK_PIDS")
        if pids:  # where the test finds the processes that stepped it
            open(os.path.join(pids, str(os.getpid())), "w").close()

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.x, self.t = int(self.np_random.integers(-2, 3)), 0
        return np.array([self.x], np.float32), {}

    def step(self, action):
        self.x += 1 if action == 1 else -1
        self.t += 1
        won = self.x >= 5
        return np.array([self.x], np.float32), float(won), won, self.t == 20, {}
'''


def _rows(run_dir: Path) -> list[dict]:
    unstable = {"wall_time", "steps_per_second"}
    return [{k: v for k, v in row.items() if k not in unstable}
            for row in read_metrics(run_dir / "metrics.csv")[1]]  # fmt: skip


def test_ppo_trains_on_gymnasium_and_two_resumes_of_one_checkpoint_give_the_same_bits(tmp_path):
    run_dir = tmp_path / "run"
    run_config = runs.RunConfig(env="gymnasium/CartPole-v1", run_dir=str(run_dir),
                                checkpoint_every=64, eval_episodes=2, progress=False)  # fmt: skip
    runs.train(PPOConfig(**TINY, total_steps=128), run_config)
    assert [int(row["env_steps"]) for row in _rows(run_dir)] == [64, 128]
    assert json.loads((run_dir / "eval.json").read_text())["episodes_per_seed"] == 2

    copies = [tmp_path / "a", tmp_path / "b"]
    for copy in copies:
        shutil.copytree(run_dir, copy)
        runs.resume(copy, total_steps=256, progress=False)
    a, b = (runs.load_run(copy) for copy in copies)
    assert int(a.state.env_steps) == 256
    for x, y in zip(jax.tree.leaves(a.state), jax.tree.leaves(b.state), strict=True):
        if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
            x, y = jax.random.key_data(x), jax.random.key_data(y)
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    assert _rows(copies[0]) == _rows(copies[1])
    assert [int(row["env_steps"]) for row in _rows(copies[0])] == [64, 128, 192, 256]


def test_host_environments_take_no_env_params_and_one_shard(tmp_path):
    with pytest.raises(ValueError, match=r"--env-params for gymnasium/CartPole-v1: .*gravity"):
        runs.train(PPOConfig(**TINY, total_steps=64),
                   runs.RunConfig(env="gymnasium/CartPole-v1", env_params=("gravity=1.0",),
                                  run_dir=str(tmp_path / "r"), progress=False))  # fmt: skip
    with pytest.raises(ValueError, match="frame_stack=4 wraps rollax's own environments"):
        make_ppo(PPOConfig(**TINY, frame_stack=4), "gymnasium/CartPole-v1")


def test_the_acting_settings_are_checked_before_anything_compiles():
    with pytest.raises(ValueError, match=r"PPOConfig.acting_lag must be 0 or 1, got 2"):
        make_ppo(PPOConfig(**TINY, acting_lag=2), "gymnasium/CartPole-v1")
    with pytest.raises(ValueError, match=r"actor_device must be an index .* got 'gpu 1'"):
        make_ppo(PPOConfig(**TINY, actor_device="gpu 1"), "gymnasium/CartPole-v1")
    with pytest.raises(ValueError, match=r"make_ppo: PPOConfig.actor_device='7' names no device"):
        make_ppo(PPOConfig(**TINY, actor_device="7"), "gymnasium/CartPole-v1")
    with pytest.raises(ValueError, match=r"acting_lag=1 .* environments written in JAX step"):
        make_ppo(PPOConfig(**TINY, acting_lag=1), "CartPole-v1")


def _rollax(*args: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rollax", *args], cwd=cwd, env=env,
                          capture_output=True, text=True)  # fmt: skip


@pytest.fixture
def walk(tmp_path) -> tuple[Path, dict]:
    """A directory holding the user's module ``my_walk``, and the subprocesses' environment."""
    (tmp_path / "my_walk.py").write_text(WALK)
    env = {k: v for k, v in os.environ.items() if k != KILL_AFTER_WRITES}
    env["JAX_PLATFORMS"] = "cpu"
    return tmp_path, env


CLI = ["--env", "my_walk:Walk", "--num-envs", "4", "--num-steps", "16", "--num-epochs", "1",
       "--num-minibatches", "1", "--hidden-sizes", "8", "--no-progress", "--eval-episodes", "2",
       "--checkpoint-every", "64", "--run-dir", "run"]  # fmt: skip


@pytest.mark.processes
@pytest.mark.timeout(300)
def test_a_user_s_python_environment_trains_and_resumes_from_the_command_line(walk):
    cwd, env = walk
    done = _rollax("train", "ppo", *CLI, "--total-steps", "128", cwd=cwd, env=env)
    assert done.returncode == 0, done.stderr
    resumed = _rollax("resume", "run", "--total-steps", "192", cwd=cwd, env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert [int(row["env_steps"]) for row in _rows(cwd / "run")] == [64, 128, 192]
    assert "episodes running at the checkpoint (step 128) restart from seeds" in resumed.stderr
    # The metrics mark the break: the 4 episodes cut at the resume, in the row after it.
    restarted = [float(row["restarted_episodes"]) for row in _rows(cwd / "run")]
    assert restarted == [0.0, 0.0, 4.0]
    assert json.loads((cwd / "run" / "eval.json").read_text())["env_steps"] == 192


def _alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie, dead but not yet reaped, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


@pytest.mark.processes
@pytest.mark.timeout(300)
def test_a_run_on_worker_processes_killed_leaves_no_worker_and_resumes(walk):
    cwd, env = walk
    pids = cwd / "pids"
    pids.mkdir()
    # Killed right after its first checkpoint, its sixth write (config, metrics and tb, then
    # the first row and its TensorBoard event).
    killed = _rollax("train", "ppo", *CLI, "--total-steps", "192", "--env-options",
                     "vectorization=async", cwd=cwd,
                     env={**env, KILL_AFTER_WRITES: "6", "WALK_PIDS": str(pids)})  # fmt: skip
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    written = [line for line in killed.stderr.splitlines() if line.startswith("rollax: write")]
    assert written[-1].endswith("checkpoints/64"), killed.stderr
    workers = [int(p.name) for p in pids.iterdir()]
    assert len(workers) == 5  # four workers, and the command that made one to see its type
    deadline = time.monotonic() + 30
    while any(map(_alive, workers)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(map(_alive, workers)), [p for p in workers if _alive(p)]
    resumed = _rollax("resume", "run", cwd=cwd, env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert [int(row["env_steps"]) for row in _rows(cwd / "run")] == [64, 128, 192]


@pytest.mark.extra("pygame")
def test_a_video_of_a_host_environment_comes_from_its_render(tmp_path):
    import imageio.v3 as iio

    run_dir = tmp_path / "run"
    run_config = runs.RunConfig(env="gymnasium/CartPole-v1", run_dir=str(run_dir),
                                eval_episodes=0, progress=False)  # fmt: skip
    runs.train(PPOConfig(**TINY, total_steps=64), run_config)
    path, _ = runs.write_video(run_dir, tmp_path / "episode.gif")
    assert iio.imread(path).shape[1:] == (400, 600, 3)  # CartPole's own frames
    # One frame before each step of the episode: the last step ends it, and the environment
    # then shows the next episode's first state. (A GIF merges equal frames: count them here.)
    run = runs.load_run(run_dir)
    frames, again = record_episode(run.agent, run.state, jax.random.key(0))
    assert len(frames) == int(again) >= 8


BREAKS = '''
import gymnasium
import numpy as np


class Breaks(gymnasium.Env):
    """Steps 40 times, then raises."""

    observation_space = gymnasium.spaces.Box(-1, 1, (1,), np.float32)
    action_space = gymnasium.spaces.Discrete(2)

    def __init__(self):
        self.calls = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.calls += 1
        if self.calls > 40:
            raise RuntimeError("the simulator lost its connection")
        return np.zeros(1, np.float32), 0.0, False, self.calls % 10 == 0, {}
'''


@pytest.mark.processes
@pytest.mark.timeout(300)
def test_an_environment_that_fails_mid_run_stops_it_and_keeps_the_last_checkpoint(
    walk, monkeypatch
):
    cwd, env = walk
    (cwd / "my_breaks.py").write_text(BREAKS)
    args = [a if a != "my_walk:Walk" else "my_breaks:Breaks" for a in CLI]
    failed = _rollax("train", "ppo", *args, "--total-steps", "256", "--env-options",
                     "vectorization=async", cwd=cwd, env=env)  # fmt: skip
    # 16 steps an iteration: the 41st step is in the third, after checkpoints 64 and 128.
    assert failed.returncode == 4, failed.stderr
    message = failed.stderr[failed.stderr.index("rollax train: ") :]
    assert message.startswith("rollax train: my_breaks:Breaks, environment ")
    assert "it raised RuntimeError: the simulator lost its connection" in message
    assert 'my_breaks.py", line 22, in step' in message  # the environment's own traceback
    assert "keeps its last complete checkpoint" in failed.stderr
    assert sorted(p.name for p in (cwd / "run" / "checkpoints").iterdir()) == ["128", "64"]
    monkeypatch.syspath_prepend(str(cwd))  # the user's module, for the run's agent here
    assert int(runs.load_run(cwd / "run").state.env_steps) == 128


def test_recurrent_agents_and_sweeps_train_on_host_environments_each_member_on_its_own():
    from rollax.agents.dqn import DQNConfig, make_dqn

    sweep = PPOConfig(num_envs=4, num_steps=16, recurrent="gru", cell_size=16, hidden_sizes=(16,),
                      total_steps=128, num_seeds=2, sweep=("learning_rate=1e-3,3e-3",))  # fmt: skip
    agent = make_ppo(sweep, "gymnasium/CartPole-v1")
    assert agent.num_seeds == 4 and agent.env.host.num_envs == 16  # 4 members x 4 environments
    state, metrics = agent.run(agent.init(jax.random.key(0)), 128)
    assert metrics["episode_return"].shape == (4,) and bool(metrics["finite"].all())
    # The members' learning rates differ, so their parameters do.
    kernels = jax.tree.leaves(state.params)[0]
    assert not np.allclose(kernels[0], kernels[2])
    assert agent.evaluate(state, jax.random.key(1), 2).shape == (4, 2)
    r2d2 = DQNConfig(num_envs=4, recurrent="gru", cell_size=16, hidden_sizes=(16,), total_steps=400,
                     learning_starts=200, buffer_size=400, sequence_length=8)  # fmt: skip
    dqn = make_dqn(r2d2, "gymnasium/CartPole-v1")
    state, metrics = dqn.run(dqn.init(jax.random.key(0)), 400)
    assert int(metrics["env_steps"]) == 400 and int(state.updates) > 0


def test_a_run_s_host_episodes_follow_its_key_and_each_member_has_its_own():
    agent = make_ppo(PPOConfig(**TINY, total_steps=64), "gymnasium/CartPole-v1")
    first = np.asarray(agent.init(jax.random.key(0)).obs)  # (members, 1, num_envs, 4)
    again = np.asarray(agent.init(jax.random.key(0)).obs)
    other = np.asarray(agent.init(jax.random.key(1)).obs)
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)
    rows = first.reshape(-1, 4)
    assert len(np.unique(rows, axis=0)) == len(rows)  # every environment its own episode


@pytest.mark.processes
@pytest.mark.timeout(600)
def test_acting_apart_from_the_learner_and_a_step_behind_it():
    """PPO and SAC on 2 CPU devices (tests/_acting_check.py): where acting runs changes no
    bit, and acting_lag=1 acts with the parameters from before the update beside it."""
    from _xla import host_devices

    script = Path(__file__).with_name("_acting_check.py")
    env = host_devices({**os.environ, "JAX_PLATFORMS": "cpu"}, 2)
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout.strip().splitlines()[-1])
    for name, r in results.items():
        sync, lag = r["sync"], r["lag"]
        for setting, device in [("sync", "cpu:0"), ("sync_apart", "cpu:1"), ("lag_apart", "cpu:1")]:
            assert all(devices == [device] for _, devices in r[setting]["acted"]), (name, setting)
        assert r["sync_apart"]["state"] == sync["state"], name
        assert r["lag_apart"]["state"] == lag["state"], name
        # Synchronous: every rollout acts with the last update's parameters.
        assert [a for a, _ in sync["acted"]] == [sync["initial"], *sync["updated"][:-1]], name
        # A step behind: with those from before the last update (the one running beside it);
        # each run call (3 iterations here) starts from the latest and ends with its update.
        u = lag["updated"]
        expected = [lag["initial"], lag["initial"], u[0], u[2], u[2], u[3]]
        assert [a for a, _ in lag["acted"]] == expected, name
        assert len(set(u)) == len(u) and lag["state"] != sync["state"], name
