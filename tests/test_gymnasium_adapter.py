"""The Gymnasium adapter against Gymnasium's own SyncVectorEnv, mode by mode, and check_env."""

from __future__ import annotations

import os
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import rollax
from _cartpole import put_gymnasium_states_into
from _xla import host_devices
from rollax.adapters.gymnasium import RollaxVectorEnv, make_vec

pytestmark = pytest.mark.extra("gymnasium")

LIMIT = 25  # short episodes so that both termination and truncation happen


def _reference(num_envs: int, mode: AutoresetMode) -> SyncVectorEnv:
    return SyncVectorEnv(
        [lambda: gym.make("CartPole-v1", max_episode_steps=LIMIT) for _ in range(num_envs)],
        autoreset_mode=mode,
    )


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_autoreset_modes_match_sync_vector_env_step_for_step(mode):
    n = 6
    reference = _reference(n, mode)
    ours = make_vec("CartPole-v1", n, autoreset_mode=mode)
    ours.params = ours.params.replace(max_episode_steps=LIMIT)
    assert ours.metadata["autoreset_mode"] is mode
    assert ours.single_observation_space == reference.single_observation_space
    assert ours.single_action_space == reference.single_action_space
    reference.reset(seed=0)
    ours.reset(seed=0)
    actions = np.random.default_rng(0).integers(0, 2, (300, n))
    ends = {"terminated": 0, "truncated": 0}
    previous_done = np.zeros(n, bool)
    for action in actions:
        put_gymnasium_states_into(ours, reference.envs)
        expected = reference.step(action)
        got = ours.step(action)
        done = expected[2] | expected[3]
        # Rows that started a new episode this step hold fresh first observations, which
        # both draw at random (differently): only their range can be compared.
        fresh = previous_done if mode is AutoresetMode.NEXT_STEP else done
        previous_done = done
        assert np.all(np.abs(got[0][fresh]) <= 0.05)
        names = ("obs", "reward", "terminated", "truncated")
        for name, want, have in zip(names, expected[:4], got[:4], strict=True):
            if name == "obs":
                want, have = want[~fresh], have[~fresh]
            np.testing.assert_allclose(have, want, rtol=1e-4, atol=1e-4, err_msg=name)
            assert have.dtype == want.dtype, name
        ends["terminated"] += int(expected[2].sum())
        ends["truncated"] += int(expected[3].sum())
        want_info, info = expected[4], got[4]
        assert set(info) == set(want_info)
        if "final_obs" in want_info:
            np.testing.assert_array_equal(info["_final_obs"], want_info["_final_obs"])
            np.testing.assert_array_equal(info["_final_info"], want_info["_final_info"])
            for a, b in zip(info["final_obs"], want_info["final_obs"], strict=True):
                assert (a is None) == (b is None)
                if a is not None:
                    np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)
    assert ends["terminated"] > 10 and ends["truncated"] > 3, ends


def test_disabled_mode_resets_only_the_masked_environments():
    n = 4
    ours = make_vec("CartPole-v1", n, autoreset_mode="disabled")
    obs, _ = ours.reset(seed=3)
    done = np.zeros(n, bool)
    while not done.any():
        obs, _, terminated, truncated, info = ours.step(np.ones(n, np.int64))
        done = terminated | truncated
        assert info == {}
    with pytest.raises(ValueError, match=r"ended and autoreset is disabled"):
        ours.step(np.ones(n, np.int64))
    new_obs, _ = ours.reset(options={"reset_mask": done})
    np.testing.assert_array_equal(new_obs[~done], obs[~done])
    assert np.all(np.abs(new_obs[done]) <= 0.05)
    ours.step(np.ones(n, np.int64))


@pytest.mark.parametrize(
    ("mask", "message"),
    [
        ([True, False, True, False], "must be a numpy array"),
        (np.ones(3, bool), r"must have shape `\(4,\)`"),
        (np.ones(4, np.int64), "must have `dtype=np.bool_`"),
        (np.zeros(4, bool), "must contain a boolean array"),
    ],
)
def test_reset_mask_is_validated_like_gymnasium(mask, message):
    ours = make_vec("CartPole-v1", 4, autoreset_mode="disabled")
    ours.reset(seed=0)
    with pytest.raises(ValueError, match=message):
        ours.reset(options={"reset_mask": mask})


def test_seeding_repeats_episodes_and_unseeded_resets_are_fresh():
    ours = make_vec("CartPole-v1", 8)
    first, _ = ours.reset(seed=42)
    again, _ = ours.reset(seed=42)
    np.testing.assert_array_equal(first, again)
    fresh, _ = ours.reset()
    assert not np.array_equal(fresh, first)
    assert len({tuple(row) for row in first}) == 8  # every environment its own start


@pytest.mark.filterwarnings("ignore::UserWarning")  # Gymnasium's advice on infinite bounds
@pytest.mark.parametrize("env_id", rollax.registered_envs())
def test_single_env_passes_gymnasiums_env_checker(env_id):
    check_env(gym.make(f"rollax/{env_id}", render_mode="rgb_array").unwrapped)


def test_registered_ids_and_gymnasium_wrappers():
    env = gym.make_vec("rollax/CartPole-v1", num_envs=4, vectorization_mode="vector_entry_point")
    assert isinstance(env, RollaxVectorEnv) and env.num_envs == 4
    assert env.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
    env = gym.wrappers.vector.RecordEpisodeStatistics(env)
    env.reset(seed=0)
    lengths = []
    for _ in range(200):
        *_, info = env.step(env.action_space.sample())
        if "episode" in info:
            lengths += info["episode"]["l"][info["_episode"]].tolist()
    assert lengths and all(0 < n <= 500 for n in lengths)
    frames = make_vec("CartPole-v1", 2, render_mode="rgb_array")
    frames.reset(seed=0)
    assert [f.shape for f in frames.render()] == [(120, 288, 3)] * 2


def test_bad_arguments_are_messages():
    with pytest.raises(ValueError, match="autoreset_mode must be one of"):
        make_vec("CartPole-v1", 2, autoreset_mode="sometimes")
    with pytest.raises(ValueError, match="num_envs must be a positive integer, got 0"):
        make_vec("CartPole-v1", 0)
    with pytest.raises(ValueError, match="Unknown environment id"):
        make_vec("CartPol-v1", 2)
    with pytest.raises(ValueError, match=r"step\(\) before reset\(\)"):
        make_vec("CartPole-v1", 2).step(np.zeros(2, np.int64))
    with pytest.raises(ValueError, match="device='tpu' is not available to JAX here"):
        make_vec("CartPole-v1", 2, device="tpu")
    with pytest.raises(TypeError, match="device must be a platform name"):
        make_vec("CartPole-v1", 2, device=0)


_ON_SECOND_CPU = """
import jax, numpy as np
from rollax.adapters.gymnasium import RollaxEnv, make_vec

first, second = jax.devices("cpu")
assert jax.devices()[0] == first
env = make_vec("CartPole-v1", 4, device=second)
env.reset(seed=1)
obs, *_ = env.step(np.zeros(4, np.int64))
env.reset(options={"reset_mask": np.array([True, False, False, False])})
assert env.device == second and isinstance(obs, np.ndarray) and obs.shape == (4, 4)
assert all(leaf.devices() == {second} for leaf in jax.tree.leaves(env.state))
env.state = jax.device_put(env.state, first)  # an assigned state moves to the adapter's device
assert all(leaf.devices() == {second} for leaf in jax.tree.leaves(env.state))
env.step(np.ones(4, np.int64))
assert make_vec("CartPole-v1", 4).device == first  # the default: the (first) CPU
single = RollaxEnv("CartPole-v1", device=second)
single.reset(seed=0)
single.step(0)
assert single.device == second
assert all(leaf.devices() == {second} for leaf in jax.tree.leaves(single._state))
print("on the second CPU")
"""


@pytest.mark.processes
def test_environments_compute_on_the_chosen_device():
    # Two host devices, so that the chosen one differs from JAX's default.
    env = host_devices(os.environ, 2)
    done = subprocess.run(
        [sys.executable, "-c", _ON_SECOND_CPU], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "on the second CPU" in done.stdout
