"""Population-based training's pieces: who copies whom, what explores, and the copy itself.

The copy runs on a real agent's state: a member takes its source's per-seed parts bit for
bit, keeps its own environments and keys, and nothing compiles twice.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys

import imageio.v3 as iio
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from _xla import host_devices
from rollax._files import KILL_AFTER_WRITES
from rollax.agents.dqn import DQNConfig
from rollax.agents.ppo import PPOConfig, make_ppo
from rollax.agents.pqn import PQNConfig
from rollax.agents.sac import SACConfig, make_sac
from rollax.agents.td3 import TD3Config
from rollax.runs import RunConfig, load_run, resume, train
from rollax.runs._pbt import (
    PBTConfig,
    choose_sources,
    explore_values,
    hyperparam_leaves,
    leaf_values,
    make_exploit,
)
from rollax.runs._population import Population, best_lineage
from rollax.runs._run_dir import HISTORY, read_history


def _bits(tree):
    """The leaves of ``tree`` as numpy arrays (keys as their data)."""
    raw = lambda x: jax.random.key_data(x) if jnp.issubdtype(x.dtype, jax.dtypes.prng_key) else x  # noqa: E731
    return [np.asarray(raw(x)) for x in jax.tree.leaves(tree)]


def _values(tree):
    """The leaves of ``tree`` that are not keys, as numpy arrays."""
    keep = [x for x in jax.tree.leaves(tree) if not jnp.issubdtype(x.dtype, jax.dtypes.prng_key)]
    return [np.asarray(x) for x in keep]


def test_the_bottom_copies_the_top_and_a_diverged_member_always_copies():
    scores = np.array([5.0, 1.0, 9.0, 3.0, 7.0, 2.0, 8.0, 4.0])
    finite = np.ones(8, bool)
    source, replaced = choose_sources(scores, finite, 0.25, np.random.default_rng(0))
    # ceil(0.25 * 8) = 2: members 1 and 5 (the lowest) copy members 2 or 6 (the highest).
    assert replaced.tolist() == [m in (1, 5) for m in range(8)]
    assert set(source[[1, 5]]) <= {2, 6}
    assert [source[m] for m in range(8) if m not in (1, 5)] == [0, 2, 3, 4, 6, 7]

    finite[2] = False  # the best scorer diverged: it copies, and is never copied
    source, replaced = choose_sources(scores, finite, 0.25, np.random.default_rng(0))
    assert replaced.tolist() == [m in (1, 2, 5) for m in range(8)]
    assert set(source[[1, 2, 5]]) <= {6, 4}


def test_a_member_without_a_score_is_neither_copied_nor_replaced():
    scores = np.array([np.nan, 1.0, 9.0, 3.0])
    source, replaced = choose_sources(scores, np.ones(4, bool), 0.25, np.random.default_rng(0))
    assert replaced.tolist() == [False, True, False, False] and source[1] == 2
    # Before any member has a score, a diverged member copies any finite one.
    unscored = np.full(4, np.nan)
    finite = np.array([True, False, True, True])
    source, replaced = choose_sources(unscored, finite, 0.25, np.random.default_rng(0))
    assert replaced.tolist() == [False, True, False, False] and source[1] in (0, 2, 3)
    with pytest.raises(ValueError, match="whole population diverged"):
        choose_sources(scores, np.zeros(4, bool), 0.25, np.random.default_rng(0))


def test_explored_values_move_by_a_factor_or_are_redrawn_within_bounds():
    values = {"learning_rate": np.array([1e-3, 2e-3, 4e-3, 9e-3])}
    source = np.array([0, 3, 2, 3])
    replaced = np.array([False, True, False, False])
    bounds = {"learning_rate": (1e-4, 1e-2)}
    seen = set()
    for seed in range(40):
        rng = np.random.default_rng(seed)
        new = explore_values(values, source, replaced, bounds, (0.8, 1.2), 0.25, rng)
        lr = new["learning_rate"]
        assert lr[[0, 2, 3]].tolist() == [1e-3, 4e-3, 9e-3]  # the others keep theirs
        assert 1e-4 <= lr[1] <= 1e-2
        if np.isclose(lr[1], 9e-3 * 0.8):
            seen.add("0.8")
        elif np.isclose(lr[1], 1e-2):  # 9e-3 * 1.2 clipped to the upper bound
            seen.add("1.2")
        else:
            seen.add("redrawn")
    assert seen == {"0.8", "1.2", "redrawn"}


def test_a_field_that_sets_a_leaf_of_another_name_is_found_and_written():
    config = SACConfig()
    sac_hyperparams = make_sac(config, "Pendulum-v1").hyperparams
    leaves = hyperparam_leaves(sac_hyperparams, config, ["target_entropy_scale"])
    names = [str(p[0].name) for p, _ in jax.tree.leaves_with_path(sac_hyperparams(config))]
    assert [names[i] for i in leaves["target_entropy_scale"]] == ["target_entropy"]
    members = [config, config]
    out = leaf_values(sac_hyperparams, members, leaves, {"target_entropy_scale": [1.0, 0.5]})
    (index,) = leaves["target_entropy_scale"]
    base = float(jax.tree.leaves(sac_hyperparams(config))[index])
    np.testing.assert_allclose(out[index], [base, base * 0.5])


@pytest.mark.parametrize(
    ("explore", "message"),
    [
        (("num_envs=1,8",), "'num_envs' is not a float the agent holds as data"),
        (("clip_epsilon=0.1,0.3",), "'clip_epsilon' is not a field of PPOConfig"),
        (("learning_rate=1e-2,1e-5",), "is not NAME=LOW,HIGH with LOW < HIGH"),
        (("learning_rate=1e-5",), "is not NAME=LOW,HIGH with LOW < HIGH"),
        (("learning_rate=1e-5,1e-4",), "learning_rate=0.0025 in PPOConfig lies outside"),
        ((), "pbt.explore is empty"),
        # Optimizer values the compiled step would ignore, and bounds no member may take.
        (("lr_schedule=0,1",), "'lr_schedule' is data but not a number"),
        (("weight_decay=0,1e-3",), r"'weight_decay' would change nothing .* optimizer='adam'"),
        (("momentum=0,0.9",), r"'momentum' would change nothing"),
        (("warmup_fraction=0,0.2",), r"no member's lr_schedule is warmup_cosine"),
        (("ent_coef=0,2",), None),  # valid: the control
    ],
)
def test_what_cannot_evolve_is_refused_with_the_reason(explore, message):
    if message is None:
        PBTConfig(interval=1024, explore=explore).bounds(PPOConfig())
        return
    with pytest.raises(ValueError, match=message):
        PBTConfig(interval=1024, explore=explore).bounds(PPOConfig())


@pytest.mark.parametrize(
    ("config", "explore", "message"),
    [
        (DQNConfig(), "max_grad_norm=0,10", "every member starts at 0, so no bound is compiled"),
        (DQNConfig(optimizer="sgd", momentum=0.5), "momentum=0.1,1.5",
         r"the bound momentum=1.5 is not a valid DQNConfig: DQNConfig.momentum must be below 1"),
        (SACConfig(optimizer="adamw", weight_decay=1e-4), "weight_decay=-1,1", "weight_decay"),
    ],
)  # fmt: skip
def test_optimizer_values_evolve_only_where_the_step_uses_them(config, explore, message):
    with pytest.raises(ValueError, match=message):
        PBTConfig(interval=1024, explore=(explore,)).bounds(config)
    # Where the step uses them, they evolve.
    PBTConfig(interval=1024, explore=("momentum=0.1,0.9",)).bounds(
        DQNConfig(optimizer="sgd", momentum=0.5)
    )
    PBTConfig(interval=1024, explore=("max_grad_norm=1,20",)).bounds(DQNConfig(max_grad_norm=10.0))


def test_the_copy_takes_the_source_s_weights_bit_for_bit_and_compiles_once():
    config = PPOConfig(num_envs=4, num_steps=16, hidden_sizes=(8,), num_seeds=4)
    agent = make_ppo(config, "CartPole-v1")
    state, _ = agent.run(agent.init(jax.random.key(0)), 256)
    ppo_hyperparams = agent.hyperparams
    leaves = hyperparam_leaves(ppo_hyperparams, config, ["learning_rate"])
    exploit = make_exploit(agent.state_layout, agent.layout, type(agent.hyperparams(config)))
    compiles = []
    jax.monitoring.register_event_duration_secs_listener(
        lambda event, *_, **__: (
            compiles.append(event)
            if event == "/jax/core/compile/backend_compile_duration"
            else None
        )
    )

    source = jnp.array([0, 1, 2, 1], jnp.int32)  # member 3 copies member 1
    lr = np.array([1e-3, 2e-3, 3e-3, 2.4e-3])
    values = leaf_values(ppo_hyperparams, [config] * 4, leaves, {"learning_rate": lr})
    new = exploit(state, source, jnp.zeros(4, bool), values)
    for a in jax.tree.leaves((new.params, new.opt_state, new.obs_stats)):
        np.testing.assert_array_equal(a[3], a[1])
    for before, after in zip(
        jax.tree.leaves(state.params), jax.tree.leaves(new.params), strict=True
    ):
        np.testing.assert_array_equal(after[:3], before[:3])
    np.testing.assert_array_equal(new.hparams.learning_rate, lr.astype(np.float32))
    np.testing.assert_array_equal(new.hparams.ent_coef, state.hparams.ent_coef)
    # Its own environments and keys stay.
    own = lambda s: _bits((s.env_state, s.obs, s.first, s.key))  # noqa: E731
    for a, b in zip(own(new), own(state), strict=True):
        np.testing.assert_array_equal(a, b)

    # A diverged member (0) takes its source's (2) environments too, but keeps its keys.
    whole = jnp.array([True, False, False, False])
    source = jnp.array([2, 1, 2, 3], jnp.int32)
    first = len(compiles)
    again = exploit(new, source, whole, values)
    agent.run(again, 256)
    assert len(compiles) == first  # neither the copy nor training compiled again
    for a in _values((again.env_state, again.obs, again.first)):
        np.testing.assert_array_equal(a[0], a[2])
    np.testing.assert_array_equal(_bits(again.key)[0], _bits(new.key)[0])
    assert not np.array_equal(_bits(again.key)[0][0], _bits(again.key)[0][2])


TINY = PPOConfig(num_envs=4, num_steps=16, num_epochs=1, num_minibatches=1, hidden_sizes=(8,))


def _pbt_run(tmp_path, name, **overrides):
    settings = {
        "env": "CartPole-v1",
        "run_dir": str(tmp_path / name),
        "log_every": 256,
        "checkpoint_every": 1024,
        "eval_episodes": 0,
        "progress": False,
        "pbt_interval": 512,
        "pbt_explore": ("learning_rate=1e-4,1e-2", "ent_coef=0,0.05"),
    }
    return RunConfig(**{**settings, **overrides})


def test_a_population_resumed_after_a_stop_makes_the_decisions_of_one_never_stopped(tmp_path):
    config = TINY.replace(num_seeds=4, total_steps=2048)
    whole = train(config, _pbt_run(tmp_path, "whole"))

    def stop_at_768(run, row):  # between two steps, and before the first checkpoint
        return run.env_steps < 768

    cut = train(config, _pbt_run(tmp_path, "cut"), callback=stop_at_768)
    assert load_run(cut).env_steps == 768
    resume(cut)

    history = read_history(whole / HISTORY)
    assert [e["env_steps"] for e in history] == [0, 512, 1024, 1536]  # none at the end
    assert history == read_history(cut / HISTORY)
    for event in history[1:]:
        # One of 4 members (ceil(0.25 * 4)) copies the best-scoring one.
        assert sum(event["replaced"]) == 1 and event["event"] == "exploit"
        (member,) = [m for m, r in enumerate(event["replaced"]) if r]
        assert event["source"][member] == int(np.nanargmax(event["scores"]))
        assert 1e-4 <= event["values"]["learning_rate"][member] <= 1e-2
    assert iio.imread(whole / "population.png").ndim == 3  # drawn at each checkpoint
    a, b = load_run(whole).state, load_run(cut).state
    for x, y in zip(_bits(a), _bits(b), strict=True):
        np.testing.assert_array_equal(x, y)
    final = history[-1]["values"]["learning_rate"]
    np.testing.assert_allclose(np.asarray(a.hparams.learning_rate), final, rtol=1e-6)


def test_the_member_made_to_score_worst_takes_the_best_member_s_weights_bit_for_bit(tmp_path):
    # A real run's population, its step taken by hand on scores that make member 2 the
    # worst and member 1 the best: with 4 members and pbt_fraction 0.25, 2 copies 1.
    config = TINY.replace(num_seeds=4, total_steps=512)
    run = load_run(train(config, _pbt_run(tmp_path, "run", pbt_interval=4096)))
    population = Population(run)
    population.window = [np.array([3.0, 9.0, -1.0, 5.0])]
    state, event = population.step(run.state, run.env_steps, np.ones(4, bool))
    assert event["replaced"] == [False, False, True, False] and event["source"][2] == 1
    per_seed = lambda s: _bits((s.params, s.opt_state, s.obs_stats))  # noqa: E731
    for before, after in zip(per_seed(run.state), per_seed(state), strict=True):
        np.testing.assert_array_equal(after[2], before[1])
        np.testing.assert_array_equal(after[[0, 1, 3]], before[[0, 1, 3]])
    lr = event["values"]["learning_rate"]
    assert lr[:2] + lr[3:] == [TINY.learning_rate] * 3
    assert 1e-4 <= lr[2] <= 1e-2  # 0.8x or 1.2x member 1's, or redrawn within the bounds
    np.testing.assert_allclose(np.asarray(state.hparams.learning_rate), lr, rtol=1e-6)


def test_a_member_that_diverges_is_replaced_at_once_and_the_population_trains_on(tmp_path):
    # Members 2 and 3 (learning rate 1e30) diverge in their first update; they take copies
    # of members 0 and 1, learning rate included, and the run ends normally.
    config = TINY.replace(num_seeds=2, total_steps=1024, sweep=("learning_rate=2.5e-4,1e30",))
    run_config = _pbt_run(tmp_path, "run", pbt_explore=("ent_coef=0,0.05",))
    run_dir = train(config, run_config)
    history = read_history(run_dir / HISTORY)
    diverged = history[1]
    assert diverged["event"] == "diverged" and diverged["env_steps"] == 256
    assert diverged["replaced"] == [False, False, True, True]
    assert set(diverged["source"][2:]) <= {0, 1}
    state = load_run(run_dir).state
    np.testing.assert_array_equal(state.hparams.learning_rate, np.full(4, 2.5e-4, np.float32))
    assert all(np.isfinite(x).all() for x in _values(state.params))
    assert load_run(run_dir).env_steps == 1024


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"pbt_fraction": 0.75}, "pbt_fraction must be in"),
        ({"pbt_perturb": 1.5}, "pbt_perturb must be in"),
        ({"pbt_explore": ()}, "pbt_explore is empty"),
    ],
)
def test_bad_population_settings_are_refused_before_anything_compiles(tmp_path, overrides, message):
    with pytest.raises(ValueError, match=message):
        train(TINY.replace(num_seeds=4), _pbt_run(tmp_path, "bad", **overrides))
    with pytest.raises(ValueError, match="needs at least 2 members"):
        train(TINY, _pbt_run(tmp_path, "one"))
    assert not (tmp_path / "bad").exists() and not (tmp_path / "one").exists()


PBT_CLI = [
    "train", "ppo", "--env", "CartPole-v1", "--num-envs", "4", "--num-steps", "16",
    "--num-epochs", "1", "--num-minibatches", "1", "--hidden-sizes", "8", "--num-seeds", "4",
    "--total-steps", "2048", "--log-every", "256", "--eval-episodes", "0", "--no-progress",
    "--pbt-interval", "512", "--pbt-explore", "learning_rate=1e-4,1e-2", "ent_coef=0,0.05",
]  # fmt: skip


@pytest.mark.processes
def test_a_population_over_4_devices_trains_as_on_1(tmp_path):
    # The command line's members on 4 (forced CPU) devices, one each, and on 1: the same
    # decisions, and parameters equal to the tolerance of tests/test_devices.py.
    env = host_devices({**os.environ, "JAX_PLATFORMS": "cpu"}, 4)
    said = {}
    for devices in (4, 1):
        done = subprocess.run(
            [sys.executable, "-m", "rollax", *PBT_CLI, "--devices", str(devices),
             "--run-dir", str(tmp_path / f"on{devices}")],
            env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        said[devices] = done.stderr
    assert "on 4 cpu devices (the seed axis over 4" in said[4] and "on 1 device" in said[1]
    four, one = read_history(tmp_path / "on4" / HISTORY), read_history(tmp_path / "on1" / HISTORY)
    assert [(e["source"], e["replaced"]) for e in four[1:]] == [
        (e["source"], e["replaced"]) for e in one[1:]
    ]
    out = tmp_path / "schedules.png"
    plot = [sys.executable, "-m", "rollax", "plot", str(tmp_path / "on4"), "--population"]
    done = subprocess.run([*plot, "--out", str(out)], env=env, capture_output=True, text=True)
    assert done.returncode == 0 and iio.imread(out).ndim == 3, done.stderr
    a, b = load_run(tmp_path / "on4").state, load_run(tmp_path / "on1").state
    for x, y in zip(_values(a.params), _values(b.params), strict=True):
        np.testing.assert_allclose(x, y, atol=1e-4)


def test_the_best_member_s_lineage_is_the_schedule_it_inherited(tmp_path):
    # Member 1 copies member 0 at step 10 (and moves its value); member 0 then copies
    # member 1 at step 20. Member 0 ends best: its schedule is 0's value, then 1's new one.
    events = [
        {"env_steps": 0, "event": "start", "values": {"lr": [1.0, 2.0]}},
        {"env_steps": 10, "event": "exploit", "scores": [5, 1], "source": [0, 0],
         "replaced": [False, True], "values": {"lr": [1.0, 1.2]}},
        {"env_steps": 20, "event": "exploit", "scores": [1, 5], "source": [1, 1],
         "replaced": [True, False], "values": {"lr": [0.96, 1.2]}},
        {"env_steps": 30, "event": "exploit", "scores": [7, 5], "source": [0, 1],
         "replaced": [False, False], "values": {"lr": [0.96, 1.2]}},
    ]  # fmt: skip
    (tmp_path / HISTORY).write_text("".join(json.dumps(e) + "\n" for e in events) + '{"cut')
    best, schedule = best_lineage(tmp_path)
    assert best == 0
    assert schedule == [(0, {"lr": 1.0}), (10, {"lr": 1.2}), (20, {"lr": 0.96}), (30, {"lr": 0.96})]


def test_a_plain_run_replays_the_best_member_s_schedule(tmp_path):
    # A population's history (member 1 copies member 0 at 512; member 0 ends best), and a
    # plain run that follows member 0's lineage: 1e-3, then 5e-4 from step 1024 on.
    population = tmp_path / "population"
    population.mkdir()
    events = [
        {"env_steps": 0, "event": "start", "values": {"learning_rate": [1e-3, 2e-3]}},
        {"env_steps": 512, "event": "exploit", "scores": [5, 1], "source": [0, 0],
         "replaced": [False, True], "values": {"learning_rate": [1e-3, 1.2e-3]}},
        {"env_steps": 1024, "event": "exploit", "scores": [1, 5], "source": [1, 1],
         "replaced": [True, False], "values": {"learning_rate": [5e-4, 1.2e-3]}},
    ]  # fmt: skip
    (population / HISTORY).write_text("".join(json.dumps(e) + "\n" for e in events))
    (population / "eval.json").write_text(
        json.dumps({"deterministic": {"per_seed_mean": [10.0, 3.0]}})
    )
    assert best_lineage(population)[1] == [
        (0, {"learning_rate": 1e-3}), (512, {"learning_rate": 1.2e-3}),
        (1024, {"learning_rate": 5e-4}),
    ]  # fmt: skip
    seen = {}

    def record(run, row):  # after each interval: the values from this step on
        seen[run.env_steps] = float(np.asarray(run.state.hparams.learning_rate)[0])

    plain = _pbt_run(tmp_path, "replay", pbt_interval=0, pbt_explore=(), pbt_replay=str(population))
    train(TINY.replace(total_steps=1536), plain, callback=record)
    expected = {256: 1e-3, 512: 1.2e-3, 768: 1.2e-3, 1024: 5e-4, 1280: 5e-4, 1536: 5e-4}
    assert seen.keys() == expected.keys()
    np.testing.assert_allclose([seen[k] for k in expected], list(expected.values()), rtol=1e-6)


@pytest.mark.parametrize(
    ("config", "env", "explore"),
    [
        (DQNConfig(num_envs=4, learning_starts=128, batch_size=32, buffer_size=1024,
                   hidden_sizes=(8,), num_seeds=4, total_steps=2048), "CartPole-v1",
         ("learning_rate=1e-5,1e-2", "exploration_end=0.01,0.2")),
        (SACConfig(num_envs=2, learning_starts=64, batch_size=32, buffer_size=512,
                   hidden_sizes=(8,), num_seeds=4, total_steps=1024), "Pendulum-v1",
         ("learning_rate=1e-5,1e-2", "target_entropy_scale=0.2,2")),
        (TD3Config(num_envs=2, learning_starts=64, batch_size=32, buffer_size=512,
                   hidden_sizes=(8,), num_seeds=4, total_steps=1024), "Pendulum-v1",
         ("learning_rate=1e-5,1e-2", "exploration_noise=0.05,0.5")),
        (PQNConfig(num_envs=4, num_steps=16, num_minibatches=1, hidden_sizes=(8,), num_seeds=4,
                   total_steps=2048), "CartPole-v1",
         ("learning_rate=1e-5,1e-2", "td_lambda=0.5,0.95")),
        # An optax transformation of the user's (a chain inside MultiSteps), by import path.
        (TINY.replace(num_seeds=4, total_steps=2048, optimizer="_optax_factories:accumulated"),
         "CartPole-v1", ("learning_rate=1e-5,1e-2",)),
    ],
)  # fmt: skip
def test_every_agent_s_population_evolves_its_hyperparameters(tmp_path, config, env, explore):
    run_config = _pbt_run(
        tmp_path, "run", env=env, pbt_explore=explore, log_every=config.total_steps // 8,
        pbt_interval=config.total_steps // 4, pbt_fraction=0.5,
    )  # fmt: skip
    run_dir = train(config, run_config)
    history = read_history(run_dir / HISTORY)
    # A step waits for the first scores (Pendulum's episodes all end after 200 steps).
    assert history[0]["event"] == "start" and len(history) >= 2
    for event in history[1:]:
        assert event["event"] == "exploit" and sum(event["replaced"]) == 2
        assert None not in event["scores"]
    state = load_run(run_dir).state
    hparams = getattr(state, "learner", state).hparams  # PQN's are the state's own, as PPO's
    np.testing.assert_allclose(
        hparams.learning_rate, history[-1]["values"]["learning_rate"], rtol=1e-6
    )


@pytest.mark.processes
def test_a_population_killed_between_a_step_and_its_checkpoint_resumes_bit_for_bit(tmp_path):
    # Killed (SIGKILL) right after the history line of the step at 1536, whose checkpoint
    # (at 2048) never came: resume goes back to the checkpoint at 1024, drops that line, and
    # takes the step again as the run that was never killed did.
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    args = [*PBT_CLI, "--devices", "1", "--checkpoint-every", "1024"]

    def rollax(run_dir, *extra, kill_after=None):
        run_env = env if kill_after is None else {**env, KILL_AFTER_WRITES: str(kill_after)}
        command = [sys.executable, "-m", "rollax", *extra]
        if not extra:
            command += [*args, "--run-dir", str(run_dir)]
        return subprocess.run(command, env=run_env, capture_output=True, text=True, timeout=600)

    whole = rollax(tmp_path / "whole", kill_after=0)
    assert whole.returncode == 0, whole.stderr[-3000:]
    written = re.findall(r"^rollax: write (\d+): (.*)$", whole.stderr, re.MULTILINE)
    history_writes = [int(n) for n, path in written if path.endswith(HISTORY)]
    cut = rollax(tmp_path / "cut", kill_after=history_writes[-1])
    assert cut.returncode == -signal.SIGKILL
    assert read_history(tmp_path / "cut" / HISTORY)[-1]["env_steps"] == 1536
    assert load_run(tmp_path / "cut").env_steps == 1024
    resumed = rollax(None, "resume", str(tmp_path / "cut"))
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert read_history(tmp_path / "cut" / HISTORY) == read_history(tmp_path / "whole" / HISTORY)
    a, b = load_run(tmp_path / "whole").state, load_run(tmp_path / "cut").state
    for x, y in zip(_bits(a), _bits(b), strict=True):
        np.testing.assert_array_equal(x, y)
