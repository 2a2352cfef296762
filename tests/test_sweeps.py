"""Sweeps: a grid of hyperparameters times the seeds, trained as one compiled program.

A member must train as its grid point's configuration would alone; a run directory must
report every member and grid point; fields that are not data must be refused before
anything compiles.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

import jax
import numpy as np
import pytest

from _xla import host_devices
from rollax.agents.dqn import DQNConfig, make_dqn
from rollax.agents.ppo import PPOConfig, make_ppo
from rollax.agents.pqn import PQNConfig, make_pqn
from rollax.agents.sac import SACConfig, make_sac
from rollax.agents.td3 import TD3Config, make_td3
from rollax.runs import RunConfig, draw_runs, load_run, resume, train
from rollax.training import SCHEDULES

PPO_SMALL = PPOConfig(num_envs=4, num_steps=32, num_epochs=2, num_minibatches=2,
                      hidden_sizes=(16,), total_steps=4096, num_seeds=2)  # fmt: skip
DQN_SMALL = DQNConfig(num_envs=4, total_steps=4000, learning_starts=200, buffer_size=1000,
                      batch_size=32, gradient_steps=1, hidden_sizes=(16,), num_seeds=2)  # fmt: skip
PQN_SMALL = PQNConfig(num_envs=4, num_steps=32, num_epochs=2, num_minibatches=2,
                      hidden_sizes=(16,), total_steps=4096, num_seeds=2)  # fmt: skip
TD3_SMALL = TD3Config(num_envs=2, total_steps=4000, learning_starts=100, buffer_size=1000,
                      batch_size=32, hidden_sizes=(16,), num_seeds=2)  # fmt: skip
SAC_SMALL = SACConfig(num_envs=2, total_steps=4000, learning_starts=100, buffer_size=1000,
                      batch_size=32, hidden_sizes=(16,), num_seeds=2)  # fmt: skip

# The program of 8 members batches its arithmetic otherwise than a program of 2 (XLA picks
# other kernels for other batch sizes), so values may differ by float32 rounding: the same
# keys, environments and hyperparameters give parameters equal to this tolerance over a
# few updates (measured: 5e-7 for PPO, 3e-6 for DQN, 0 for SAC). Longer runs amplify
# rounding like any change of batch size; a wrong key or hyperparameter differs at once.
ATOL = 1e-5


def _learner_params(state):
    return state.params if hasattr(state, "params") else state.learner.params


@pytest.mark.parametrize(
    ("make", "config", "env", "sweep", "alone", "steps"),
    [
        (make_ppo, PPO_SMALL, "CartPole-v1", ("learning_rate=1e-3,3e-3", "ent_coef=0,0.05"),
         {"learning_rate": 3e-3, "ent_coef": 0.05}, 512),
        (make_pqn, PQN_SMALL, "CartPole-v1", ("learning_rate=1e-3,3e-3", "td_lambda=0.5,0.9"),
         {"learning_rate": 3e-3, "td_lambda": 0.9}, 512),
        (make_dqn, DQN_SMALL, "CartPole-v1", ("learning_rate=1e-3,3e-3", "gamma=0.9,0.95"),
         {"learning_rate": 3e-3, "gamma": 0.95}, 400),
        (make_sac, SAC_SMALL, "Pendulum-v1", ("learning_rate=1e-3,3e-3", "tau=0.01,0.05"),
         {"learning_rate": 3e-3, "tau": 0.05}, 200),
        (make_td3, TD3_SMALL, "Pendulum-v1", ("learning_rate=1e-3,3e-3", "policy_noise=0.1,0.3"),
         {"learning_rate": 3e-3, "policy_noise": 0.3}, 200),
    ],
    ids=["ppo", "pqn", "dqn", "sac", "td3"],
)  # fmt: skip
def test_a_swept_member_trains_as_its_configuration_alone(make, config, env, sweep, alone, steps):
    swept = make(config.replace(sweep=sweep), env)
    single = make(config.replace(**alone), env)
    assert swept.num_seeds == 8 and single.num_seeds == 2
    s_swept, m_swept = swept.run(swept.init(jax.random.key(3)), steps)
    s_single, m_single = single.run(single.init(jax.random.key(3)), steps)
    last = slice(6, 8)  # the last grid point's two seeds
    hp_swept = s_swept.hparams if hasattr(s_swept, "hparams") else s_swept.learner.hparams
    hp_single = s_single.hparams if hasattr(s_single, "hparams") else s_single.learner.hparams
    for a, b in zip(jax.tree.leaves(hp_single), jax.tree.leaves(hp_swept), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b)[last])
    np.testing.assert_array_equal(m_single["episodes"], m_swept["episodes"][last])
    leaves = zip(
        jax.tree.leaves(_learner_params(s_single)),
        jax.tree.leaves(_learner_params(s_swept)),
        strict=True,
    )
    for a, b in leaves:
        np.testing.assert_allclose(np.asarray(b)[last], np.asarray(a), rtol=0, atol=ATOL)
    # The other points trained otherwise from the same start (the test sees a difference).
    first = jax.tree.leaves(_learner_params(s_swept))[-1]
    assert np.abs(np.asarray(first)[0:2] - np.asarray(first)[last]).max() > 100 * ATOL


def test_a_sweep_run_reports_every_member_and_grid_point(tmp_path):
    config = PPO_SMALL.replace(
        total_steps=1024, sweep=("learning_rate=1e-3,3e-3", "lr_schedule=linear,constant")
    )
    rc = RunConfig(run_dir=str(tmp_path / "sweep"), progress=False, eval_episodes=4,
                   log_every=256)  # fmt: skip
    run_dir = train(config, rc)
    with (run_dir / "metrics.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    points = [
        f"learning_rate={lr} lr_schedule={schedule}"
        for lr in ("1e-3", "3e-3")
        for schedule in ("linear", "constant")
    ]
    members = [f"episode_return[{p}]_seed{s}" for p in points for s in range(2)]
    assert [c for c in rows[0] if c.startswith("episode_return[")] == members
    assert all(rows[-1][c] != "" for c in members)
    boards = sorted(p.name for p in (run_dir / "tb").iterdir() if p.is_dir())
    assert boards == sorted(p.replace(" ", ",") for p in points)
    assert all(any((run_dir / "tb" / b).glob("events.out.tfevents.*")) for b in boards)
    result = json.loads((run_dir / "eval.json").read_text())
    assert [p["point"] for p in result["points"]] == points
    per_member = np.asarray(result["deterministic"]["per_seed_mean"]).reshape(4, 2).mean(axis=1)
    np.testing.assert_allclose([p["deterministic"] for p in result["points"]], per_member)
    legend = [t.get_text() for t in draw_runs([run_dir]).axes[0].get_legend().get_texts()]
    assert legend == [f"{p} (2 seeds)" for p in points]
    # A new budget stretches every member's schedule (2048 / (4 * 32) updates); the members
    # with a constant learning rate keep it (their schedule's code).
    resume(run_dir, total_steps=2048)
    hparams = load_run(run_dir).state.hparams
    np.testing.assert_array_equal(hparams.schedule_steps, np.full(8, 16.0, np.float32))
    codes = [SCHEDULES.index(s) for s in ("linear", "linear", "constant", "constant")] * 2
    np.testing.assert_array_equal(hparams.lr_schedule, np.asarray(codes, np.float32))
    with (run_dir / "metrics.csv").open(newline="") as f:
        assert len(list(csv.DictReader(f))) == 2 * len(rows)


def test_dqn_members_keep_their_exploration_schedule_on_a_new_budget(tmp_path):
    config = DQN_SMALL.replace(total_steps=800, sweep=("exploration_fraction=0.25,0.5",))
    rc = RunConfig(run_dir=str(tmp_path / "dqn"), progress=False, eval_episodes=0)
    run_dir = train(config, rc)
    steps = load_run(run_dir, total_steps=1600).state.learner.hparams.exploration_steps
    np.testing.assert_array_equal(np.asarray(steps), [400, 400, 800, 800])
    # A run written before sweeps existed has no "sweep" in config.json: it still loads.
    old = tmp_path / "old"
    train(DQN_SMALL.replace(total_steps=400), RunConfig(run_dir=str(old), progress=False,
                                                        eval_episodes=0))  # fmt: skip
    stored = json.loads((old / "config.json").read_text())
    del stored["config"]["sweep"]
    del stored["run"]["checkpoint_minutes"]  # ... nor checkpoints by time: a tenth of the budget
    (old / "config.json").write_text(json.dumps(stored))
    loaded = load_run(old)
    assert loaded.config.sweep == ()
    assert (loaded.run_config.checkpoint_every, loaded.run_config.checkpoint_minutes) == (40, 0)


@pytest.mark.parametrize(
    ("sweep", "message"),
    [
        (("num_envs=4,8",), r"'num_envs' cannot be swept in one program: it sets array shapes"),
        (("recurrent=gru,lstm",), r"'recurrent' cannot .* chooses which code is compiled"),
        (("lr=1e-3",), r"'lr' is not a field of PPOConfig; fields it can sweep: learning_rate"),
        (("ent_coef=0,-1",), r"sweep point ent_coef=-1.0: PPOConfig.ent_coef must be >= 0"),
        (("ent_coef=0,high",), r"sweep ent_coef must be a number, got 'high'"),
        (("ent_coef",), r"'ent_coef' is not NAME=V1,V2"),
        (("ent_coef=0,",), r"'ent_coef=0,' is not NAME=V1,V2"),
        (("gamma=0.9", "gamma=0.99"), r"'gamma' is swept twice"),
        (("gamma=0.9,0.9",), r"'gamma=0.9,0.9' repeats a value"),
        ("gamma=0.9", r"sweep must be NAME=V1,V2,... strings"),
    ],
)
def test_bad_sweeps_are_refused_with_a_reason(sweep, message):
    with pytest.raises(ValueError, match=message):
        make_ppo(PPO_SMALL.replace(sweep=sweep), "CartPole-v1")


@pytest.mark.processes
def test_sweep_on_the_command_line(tmp_path):
    run_dir = tmp_path / "cli"
    args = [sys.executable, "-m", "rollax", "train", "dqn", "--env", "CartPole-v1",
            "--num-envs", "4", "--buffer-size", "1000", "--learning-starts", "200",
            "--batch-size", "32", "--hidden-sizes", "16", "--total-steps", "400",
            "--num-seeds", "2", "--sweep", "learning_rate=1e-3,3e-3", "--sweep",
            "tau=0.01,0.1,1.0", "--eval-episodes", "2", "--no-progress",
            "--run-dir", str(run_dir)]  # fmt: skip
    proc = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "learning_rate=3e-3 tau=1.0:" in proc.stderr  # each point's final return
    # The command line makes each core a device, and --devices auto (its default) spreads
    # the members over as many as divide them.
    cores = len(os.sched_getaffinity(0))
    spread = max(d for d in range(1, cores + 1) if 12 % d == 0)
    said = f"training 12 members (6 grid points x 2 seeds) on {spread} "
    assert said in proc.stderr, proc.stderr
    stored = json.loads((run_dir / "config.json").read_text())
    assert stored["config"]["sweep"] == ["learning_rate=1e-3,3e-3", "tau=0.01,0.1,1.0"]
    hparams = load_run(run_dir).state.learner.hparams
    np.testing.assert_allclose(
        np.asarray(hparams.tau), np.repeat([0.01, 0.1, 1.0, 0.01, 0.1, 1.0], 2)
    )
    bad_args = [*args[:-2], "--sweep", "batch_size=32,64", "--run-dir", str(tmp_path / "bad")]
    bad = subprocess.run(bad_args, capture_output=True, text=True, timeout=600)
    assert bad.returncode == 2
    assert "'batch_size' cannot be swept in one program" in bad.stderr
    assert not (tmp_path / "bad").exists()


@pytest.mark.processes
def test_auto_devices_spread_the_seed_axis_alone():
    code = (
        "import json; from rollax.training._layout import make_layout as m; print(json.dumps("
        "[[x.seed_devices, x.data_devices] for x in (m(8, 1, 'auto'), m(6, 2, 'auto'), "
        "m(3, 4, 'auto'), m(1, 1, 'auto'))]))"
    )
    env = host_devices({**os.environ, "JAX_PLATFORMS": "cpu"}, 4)
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1]) == [[4, 1], [3, 1], [3, 1], [1, 1]]


def test_the_command_line_makes_each_core_a_device_unless_a_count_is_set(monkeypatch):
    from rollax._xla_cpu import cores_as_devices

    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=3")
    assert cores_as_devices() == 3
    assert os.environ["XLA_FLAGS"] == "--xla_force_host_platform_device_count=3"
    monkeypatch.setenv("XLA_FLAGS", "--other=1")
    cores = len(os.sched_getaffinity(0))
    assert cores_as_devices() == cores
    assert os.environ["XLA_FLAGS"] == f"--other=1 --xla_force_host_platform_device_count={cores}"
