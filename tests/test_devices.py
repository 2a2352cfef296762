"""Several devices in one process: JAX's CPU split into 4 devices in a subprocess.

The same global batch trains to the same result on 1 device and on 4 (up to the order of
floating-point reductions), the shards really sit on 4 devices, and seeds spread over
devices train as they do side by side on one.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from _xla import host_devices
from rollax.agents.ppo import PPOConfig, make_ppo
from rollax.training import make_layout
from rollax.training._layout import _packed_pmean

# One worker runs the module: its fixture trains every agent on 1 and 4 devices (about two
# minutes), which each worker would run again for the tests it drew (make test's --dist
# loadgroup keeps a group on one worker).
pytestmark = pytest.mark.xdist_group("devices")

SCRIPT = Path(__file__).with_name("_devices_check.py")
# Plain DQN is left out here: test_a_checkpoint_of_4_devices_restores_on_2_and_on_1_with_its_replay
# trains it on 4 devices and carries it on to the same numbers on 2 and on 1. PQN and TD3 are
# in, though their drivers are PPO's and SAC's: an agent's own learn step is where a mean
# over shards can go missing.
AGENTS = ("ppo", "pqn", "recurrent_dqn", "sac", "td3")
# Parameters after a few gradient steps: float32 sums in another order differ in their last
# bits, which later steps carry on (1.7e-6 was the largest difference seen, SAC's).
TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def results():
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *AGENTS], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.processes
@pytest.mark.parametrize("agent", AGENTS)
def test_four_devices_train_as_one_with_the_same_global_batch(results, agent):
    r = results[agent]
    assert r["devices"] == 4
    assert r["shards_max_diff"] < TOLERANCE
    assert r["shards_episodes"][0] == r["shards_episodes"][1]
    # Each seed's environments are split over the 4 devices; the parameters are on all.
    assert r["obs_devices"] == 4 and r["obs_spec"] == "P(None, 'data')"
    assert r["params_devices"] == 4


@pytest.mark.processes
@pytest.mark.parametrize("agent", AGENTS)
def test_seeds_spread_over_devices_train_as_side_by_side(results, agent):
    r = results[agent]
    assert r["seed_params_devices"] == 4
    assert r["seeds_max_diff"] < TOLERANCE


def test_a_seed_s_environments_do_not_change_when_seeds_are_added():
    # The pool strategy shares nothing between seeds: seed 0's first states, pooled states
    # and reset keys are the same alone and beside two more seeds.
    config = PPOConfig(num_envs=16, num_steps=8)
    states = [
        make_ppo(config.replace(num_seeds=s), "CartPole-v1", reset_strategy="pool").init(
            jax.random.key(1)
        )
        for s in (1, 3)
    ]
    one, three = (jax.tree.map(lambda x: x[0], s.env_state) for s in states)
    for a, b in zip(jax.tree.leaves(one), jax.tree.leaves(three), strict=True):
        if jax.dtypes.issubdtype(a.dtype, jax.dtypes.prng_key):
            a, b = jax.random.key_data(a), jax.random.key_data(b)
        np.testing.assert_array_equal(a, b)
    # And so are its parameters and its rollout's first actions.
    for a, b in zip(
        jax.tree.leaves(states[0].params),
        jax.tree.leaves(jax.tree.map(lambda x: x[:1], states[1].params)),
        strict=True,
    ):
        np.testing.assert_array_equal(a, b)


def test_bad_layouts_are_clear_errors_before_anything_compiles():
    with pytest.raises(ValueError, match=r"devices=2 but JAX sees 1 device"):
        make_layout(1, 1, 2)
    with pytest.raises(ValueError, match=r"devices must be a positive integer, 'all' or 'auto'"):
        make_ppo(PPOConfig(devices=0), "CartPole-v1")
    with pytest.raises(ValueError, match=r"devices must be a positive integer or 'all'"):
        make_layout(1, 1, "some")
    with pytest.raises(ValueError, match=r"num_shards=3 must divide num_envs=8"):
        make_ppo(PPOConfig(num_shards=3), "CartPole-v1")
    assert make_layout(2, 4, "all").mesh is None  # one device here: no mesh


def test_the_cross_device_mean_packs_leaves_and_keeps_every_value():
    # One collective per dtype (not per leaf) must give what a leaf-by-leaf mean gives, for
    # leaves of every rank and two dtypes interleaved.
    rng = np.random.default_rng(0)
    tree = {
        "kernel": rng.normal(size=(3, 4, 5)).astype(np.float32),
        "bias": rng.normal(size=(3, 5)).astype(np.float32),
        "scale": rng.normal(size=(3,)).astype(np.float32),
        "half": rng.normal(size=(3, 2, 2)).astype(np.float16),
        "last": rng.normal(size=(3, 7)).astype(np.float32),
    }
    packed = jax.vmap(lambda t: _packed_pmean(t, "d"), axis_name="d")(tree)
    plain = jax.vmap(lambda t: jax.lax.pmean(t, "d"), axis_name="d")(tree)
    for name in tree:
        assert packed[name].dtype == tree[name].dtype
        np.testing.assert_array_equal(packed[name], plain[name], err_msg=name)


DQN_OPTIONS = [
    "--env", "CartPole-v1", "--num-envs", "8", "--buffer-size", "2048", "--learning-starts",
    "256", "--batch-size", "32", "--gradient-steps", "1", "--hidden-sizes", "16",
    "--num-shards", "4", "--total-steps", "1024", "--log-every", "256",
    "--checkpoint-every", "512", "--eval-episodes", "0", "--no-progress",
]  # fmt: skip


def _rollax(args: list[str], devices: int, env: dict) -> subprocess.CompletedProcess:
    env = host_devices(env, devices)
    return subprocess.run(
        [sys.executable, "-m", "rollax", *args], env=env, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip


@pytest.mark.processes
def test_a_checkpoint_of_4_devices_restores_on_2_and_on_1_with_its_replay(tmp_path):
    import shutil

    from rollax.runs import load_run

    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    whole = tmp_path / "whole"
    done = _rollax(
        ["train", "dqn", *DQN_OPTIONS, "--devices", "4", "--run-dir", str(whole)], 4, env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    expected = [np.asarray(x) for x in jax.tree.leaves(load_run(whole).state.learner)]

    def stopped_at_512(name: str) -> Path:
        """A copy of the run as if it had stopped after its checkpoint at step 512."""
        copy = tmp_path / name
        shutil.copytree(whole, copy)
        shutil.rmtree(copy / "checkpoints" / "1024")
        return copy

    # A layout whose data axis does not divide the 4 shards: an error, the run untouched.
    half = stopped_at_512("half")
    bad = _rollax(["resume", str(half), "--devices", "3"], 3, env)
    assert bad.returncode == 2 and "must divide num_shards=4" in bad.stderr
    assert load_run(half).env_steps == 512

    for devices in (2, 1):
        copy = stopped_at_512(f"on{devices}")
        done = _rollax(["resume", str(copy), "--devices", str(devices)], devices, env)
        assert done.returncode == 0, done.stderr[-3000:]
        run = load_run(copy)
        assert run.env_steps == 1024
        # The replay shards came back too: learning went on from them, to the same numbers.
        got = [np.asarray(x) for x in jax.tree.leaves(run.state.learner)]
        for a, b in zip(expected, got, strict=True):
            np.testing.assert_allclose(a, b, atol=TOLERANCE)


@pytest.mark.processes
def test_two_devices_for_one_seed_split_it_into_two_shards_unless_told_otherwise(tmp_path):
    # The fault: `--devices 2` for one seed was refused unless --num-shards was set too. Left
    # to the layer, the shards are what the data axis needs, said on stderr and recorded in
    # config.json, so a resume keeps them on any devices; an explicit conflict is an error.
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    tiny = [
        "--env", "CartPole-v1", "--num-envs", "4", "--num-steps", "16", "--num-epochs", "1",
        "--num-minibatches", "1", "--hidden-sizes", "8", "--total-steps", "128",
        "--eval-episodes", "0", "--no-progress",
    ]  # fmt: skip
    run_dir = tmp_path / "run"
    done = _rollax(["train", "ppo", *tiny, "--devices", "2", "--run-dir", str(run_dir)], 2, env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "num_shards=2: each seed's environments are split over 2 devices" in done.stderr
    assert json.loads((run_dir / "config.json").read_text())["config"]["num_shards"] == 2
    told = _rollax(["train", "ppo", *tiny, "--devices", "2", "--num-shards", "1",
                    "--run-dir", str(tmp_path / "told")], 2, env)  # fmt: skip
    assert told.returncode == 2 and "must divide num_shards=1" in told.stderr, told.stderr
    assert make_ppo(PPOConfig(), "CartPole-v1").config.num_shards == 1  # one device here
