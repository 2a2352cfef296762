"""Run directories that set the environment: params and options saved with the run and used
again on resume and eval, and callbacks that change them between chunks (curricula)."""

from __future__ import annotations

import dataclasses
import json

import jax
import numpy as np
import pytest

from rollax.agents.ppo import PPOConfig
from rollax.runs import RunConfig, evaluate_run, load_run, resume, train

SMALL = PPOConfig(num_envs=4, num_steps=16, num_epochs=1, num_minibatches=2,
                  hidden_sizes=(16,), total_steps=1024)  # fmt: skip


def _run_config(tmp_path, name: str, **options) -> RunConfig:
    return RunConfig(run_dir=str(tmp_path / name), progress=False, eval_episodes=4,
                     log_every=128, **options)  # fmt: skip


def _returns(run_dir) -> list[float]:
    import csv

    with (run_dir / "metrics.csv").open(newline="") as f:
        return [float(r["episode_return"]) for r in csv.DictReader(f) if r["episode_return"]]


def test_env_params_reach_the_compiled_step_and_survive_resume_and_eval(tmp_path):
    # CartPole returns 1 per step: a limit of 12 steps caps every return at 12.
    rc = _run_config(tmp_path, "limit", env_params=("max_episode_steps=12",))
    run_dir = train(SMALL, rc)
    stored = json.loads((run_dir / "config.json").read_text())
    assert stored["run"]["env_params"] == ["max_episode_steps=12"]
    assert max(_returns(run_dir)) <= 12
    resume(run_dir, total_steps=2048)
    assert max(_returns(run_dir)) <= 12 and len(_returns(run_dir)) > 8
    run = load_run(run_dir)
    assert int(run.state.env_params.max_episode_steps) == 12
    result = evaluate_run(run_dir, episodes=4)
    assert result["stochastic"]["mean"] <= 12
    assert b"\r\n" not in (run_dir / "metrics.csv").read_bytes()  # one line ending after resume


def test_env_options_build_the_environment_on_train_resume_and_eval(tmp_path):
    rc = _run_config(tmp_path, "maze", env="Maze-v0", env_options=("view_size=3",),
                     env_params=("max_episode_steps=30", "wall_removal_prob=0.5"))  # fmt: skip
    run_dir = train(SMALL.replace(total_steps=512), rc)
    run = load_run(run_dir)
    assert run.agent.env.env.view_size == 3
    assert float(run.state.env_params.wall_removal_prob) == 0.5


def test_checkpoints_fall_due_by_time_or_by_steps(tmp_path):
    from rollax.checkpoints import Checkpointer

    def saved(name, **options):
        rc = _run_config(tmp_path, name, keep_checkpoints=10, **options)
        rc = dataclasses.replace(rc, eval_episodes=0)
        return Checkpointer(train(SMALL, rc) / "checkpoints", 10).steps()

    assert saved("short") == [1024]  # shorter than checkpoint_minutes: only the last one
    assert saved("clock", checkpoint_minutes=1e-9) == list(range(128, 1025, 128))
    assert saved("steps", checkpoint_every=512, checkpoint_minutes=0) == [512, 1024]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"env_params": ("grid_size=9",)},
            r"--env-params for CartPole-v1: .*unknown field\(s\) \['grid_size'\]",
        ),
        ({"env_params": ("max_episode_steps=0.5",)}, "max_episode_steps holds int32"),
        ({"env_params": ("max_episode_steps",)}, "'max_episode_steps' is not NAME=VALUE"),
        ({"env_options": ("a=1", "a=2")}, "'a' is given twice"),
    ],
)
def test_bad_env_settings_are_messages_before_anything_compiles(tmp_path, options, message):
    with pytest.raises(ValueError, match=message):
        train(SMALL, _run_config(tmp_path, "bad", **options))
    assert not (tmp_path / "bad" / "checkpoints").exists()


def _curriculum(run, row):
    """Lengthen CartPole's episodes as training goes: decided from the state alone."""
    limit = 20 if run.env_steps < 384 else 40 if run.env_steps < 768 else 60
    params = run.state.env_params
    if int(params.max_episode_steps) != limit:
        run.state = run.state.replace(env_params=params.replace(max_episode_steps=limit))


def test_a_callback_curriculum_resumes_bit_identically_after_a_stop(tmp_path):
    start = ("max_episode_steps=20",)  # the first stage, from the start
    whole = train(SMALL, _run_config(tmp_path, "whole", env_params=start), callback=_curriculum)

    def stop_midway(run, row):
        _curriculum(run, row)
        return run.env_steps < 640  # False at step 640, between two stages: checkpoint, stop

    cut = train(SMALL, _run_config(tmp_path, "cut", env_params=start), callback=stop_midway)
    assert load_run(cut).env_steps == 640 and not (cut / "eval.json").exists()
    resume(cut, callback=_curriculum)
    a, b = load_run(whole).state, load_run(cut).state
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
            x, y = jax.random.key_data(x), jax.random.key_data(y)
        np.testing.assert_array_equal(x, y)
    assert int(a.env_params.max_episode_steps) == 60
    returns = _returns(whole)
    assert max(returns[:3]) <= 20 < max(returns)  # the limit rose during training


def test_a_callback_may_change_hyperparameters_but_not_shapes(tmp_path):
    def halve_learning_rate(run, row):
        hp = run.state.hparams
        run.state = run.state.replace(hparams=hp.replace(learning_rate=hp.learning_rate / 2))

    run_dir = train(SMALL, _run_config(tmp_path, "lr"), callback=halve_learning_rate)
    start = PPOConfig().learning_rate
    assert float(load_run(run_dir).state.hparams.learning_rate[0]) == pytest.approx(start / 2**8)

    def grow(run, row):
        hp = run.state.hparams
        run.state = run.state.replace(hparams=hp.replace(learning_rate=np.zeros(3, np.float32)))

    with pytest.raises(ValueError, match="'grow' changed the training state's structure, shapes"):
        train(SMALL, _run_config(tmp_path, "grow"), callback=grow)


def test_rounded_intervals_are_said(capsys):
    from rollax.runs._loop import intervals

    rc = RunConfig(log_every=1000, checkpoint_every=65_536)
    assert intervals(rc, 1_000_000, 384, announce=True) == (1152, 65_664)
    err = capsys.readouterr().err
    assert "logging every 1,152 steps (--log-every 1,000 rounded up to whole iterations" in err
    assert "checkpoints every 65,664 steps (--checkpoint-every 65,536 rounded up" in err
    assert intervals(RunConfig(log_every=768, checkpoint_every=1536), 10_000, 384, True) == (
        768,
        1536,
    )
    assert capsys.readouterr().err == ""  # nothing rounded, nothing said


@pytest.mark.parametrize(
    ("make_config", "message"),
    [
        ("SACConfig(tau=0.0)", r"SACConfig.tau must lie in \(0, 1\], got 0.0"),
        ("DQNConfig(tau=0.0)", r"DQNConfig.tau must lie in \(0, 1\], got 0.0"),
        ("PPOConfig(vf_coef=0.0)", "PPOConfig.vf_coef must be positive, got 0.0"),
    ],
)
def test_settings_an_agent_cannot_learn_with_are_refused(make_config, message):
    from rollax.agents.dqn import DQNConfig  # noqa: F401
    from rollax.agents.sac import SACConfig  # noqa: F401

    with pytest.raises(ValueError, match=message):
        eval(make_config).validate()
