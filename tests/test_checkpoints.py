"""Checkpoints: bit-identical resume, exact keys, and clear errors for bad checkpoints."""

from __future__ import annotations

from pathlib import Path

import jax
import numpy as np
import pytest

from rollax.agents.ppo import PPOConfig, make_ppo
from rollax.checkpoints import Checkpointer, CheckpointError

SMALL = PPOConfig(num_envs=4, num_steps=16, total_steps=4096, num_epochs=2, num_minibatches=2)


def _assert_trees_equal(a, b):
    def raw(x):
        if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
            return np.asarray(jax.random.key_data(x))
        return np.asarray(x)

    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb, strict=True):
        assert x.dtype == y.dtype
        np.testing.assert_array_equal(raw(x), raw(y))


@pytest.fixture(scope="module")
def agent():
    return make_ppo(SMALL.replace(num_seeds=2), "Maze-v0", reset_strategy="pool")


def test_restore_and_continue_is_bit_identical_to_an_uninterrupted_run(agent, tmp_path):
    # The maze's pool of fresh resets, the env keys and the optimizer state all travel.
    start = agent.init(jax.random.key(5))
    whole, m_whole = agent.run(start, 256)

    half, _ = agent.run(start, 128)
    ckpt = Checkpointer(tmp_path / "ckpt")
    ckpt.save(128, half, {"algo": "ppo", "config": {"num_envs": 4}})
    del half
    target = jax.eval_shape(agent.init, jax.random.key(0))
    restored, config = ckpt.restore(target)
    assert config == {"algo": "ppo", "config": {"num_envs": 4}}
    resumed, m_resumed = agent.run(restored, 128)

    _assert_trees_equal(whole, resumed)
    assert int(m_resumed["env_steps"]) == int(m_whole["env_steps"]) == 256


def test_a_recurrent_run_resumes_bit_identically_carry_included(tmp_path):
    # The carry of every environment travels with the state; the stored carries of a
    # rollout are rebuilt from it, so the replay after a resume is the same.
    config = SMALL.replace(recurrent="lstm", cell_size=8, hidden_sizes=(8,), chunk_length=8)
    recurrent = make_ppo(config.replace(burn_in=4), "Maze-v0", view_size=3)
    start = recurrent.init(jax.random.key(2))
    whole, _ = recurrent.run(start, 192)
    half, _ = recurrent.run(start, 128)
    assert np.abs(np.asarray(half.carry[0])).max() > 0  # a live carry is saved
    ckpt = Checkpointer(tmp_path / "ckpt")
    ckpt.save(128, half, {})
    restored, _ = ckpt.restore(jax.eval_shape(recurrent.init, jax.random.key(0)))
    resumed, _ = recurrent.run(restored, 64)
    _assert_trees_equal(whole, resumed)


def test_keys_come_back_exactly(agent, tmp_path):
    state = agent.init(jax.random.key(1))
    ckpt = Checkpointer(tmp_path)
    ckpt.save(0, state, {})
    restored, _ = ckpt.restore(jax.eval_shape(agent.init, jax.random.key(0)))
    _assert_trees_equal(state, restored)
    assert jax.dtypes.issubdtype(restored.key.dtype, jax.dtypes.prng_key)


def test_leaves_without_values_come_back_with_their_shapes(tmp_path):
    # MJX's state holds arrays with a zero in their shape (act for a model without
    # activations), which Orbax cannot store: a Playground run failed at its first checkpoint.
    state = {
        "act": np.zeros((4, 0), np.float32),
        "qpos": np.arange(8, dtype=np.float32).reshape(4, 2),
        "inner": {"contacts": np.zeros((0, 3), np.int32), "key": jax.random.key(5)},
    }
    ckpt = Checkpointer(tmp_path)
    ckpt.save(1, state, {})
    one = jax.sharding.SingleDeviceSharding(jax.devices()[0])
    for shardings in (None, jax.tree.map(lambda _: one, state)):
        restored, _ = ckpt.restore(jax.eval_shape(lambda: state), shardings=shardings)
        _assert_trees_equal(state, restored)
        assert restored["inner"]["contacts"].dtype == np.int32
    with pytest.raises(CheckpointError, match=r"qpos is stored as float32\[4, 2\]"):
        ckpt.restore({**state, "qpos": np.zeros((4, 3), np.float32)})


def test_only_the_newest_checkpoints_are_kept(tmp_path):
    ckpt = Checkpointer(tmp_path, max_to_keep=2)
    for step in (10, 20, 30):
        ckpt.save(step, {"x": np.float32(step)}, {"step": step})
    assert ckpt.steps() == [20, 30]
    assert ckpt.latest_step() == 30
    assert ckpt.read_config() == {"step": 30}


def test_a_missing_checkpoint_is_a_clear_error(tmp_path):
    with pytest.raises(CheckpointError, match="No complete checkpoint in"):
        Checkpointer(tmp_path / "nothing").restore({"x": np.float32(0)})
    ckpt = Checkpointer(tmp_path)
    ckpt.save(1, {"x": np.float32(1)}, {})
    with pytest.raises(CheckpointError, match=r"No checkpoint for step 7 .* available: \[1\]"):
        ckpt.restore({"x": np.float32(0)}, step=7)


def test_a_truncated_checkpoint_is_a_clear_error_and_earlier_ones_still_restore(tmp_path):
    ckpt = Checkpointer(tmp_path)
    ckpt.save(1, {"x": np.arange(100, dtype=np.float32)}, {})
    ckpt.save(2, {"x": np.arange(100, dtype=np.float32) + 1}, {})
    files = (tmp_path / "2" / "state").rglob("*")
    data = [p for p in files if p.is_file() and p.parent.name == "d"]
    assert data, "expected Orbax array data files"
    for path in data:
        Path(path).write_bytes(path.read_bytes()[:10])
    target = {"x": jax.ShapeDtypeStruct((100,), np.float32)}
    with pytest.raises(CheckpointError, match=r"heckpoint 2 .* damaged"):
        ckpt.restore(target)
    restored, _ = ckpt.restore(target, step=1)
    np.testing.assert_array_equal(restored["x"], np.arange(100, dtype=np.float32))


def test_an_incompatible_checkpoint_names_what_differs(tmp_path):
    ckpt = Checkpointer(tmp_path)
    small = make_ppo(SMALL, "CartPole-v1")
    ckpt.save(0, small.init(jax.random.key(0)), {})
    bigger = make_ppo(SMALL.replace(num_envs=8), "CartPole-v1")
    with pytest.raises(
        CheckpointError, match=r"does not fit: .* stored as .*4\] but this run expects .*8\]"
    ):
        ckpt.restore(jax.eval_shape(bigger.init, jax.random.key(0)))
    with pytest.raises(CheckpointError, match="holds a different state: missing"):
        ckpt.restore({"other": jax.ShapeDtypeStruct((3,), np.float32)})


def test_config_must_be_json(tmp_path):
    with pytest.raises(TypeError, match="config must be JSON-serializable"):
        Checkpointer(tmp_path).save(0, {"x": np.float32(0)}, {"bad": object()})
    assert Checkpointer(tmp_path).steps() == []
