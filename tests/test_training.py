"""The shared training layer: configuration files decoded by field type, a run's keys, the
evaluator that reads the state's params and episode limit."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Literal

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import rollax
from rollax._struct import pytree_dataclass
from rollax.agents.ppo import PRESETS, PPOConfig
from rollax.runs import RunConfig, run_keys
from rollax.training import (
    ConfigError,
    config_to_json,
    decode_config,
    feedforward_policy,
    make_evaluator,
    params_for_batch,
    vmap_seeds,
)


@dataclasses.dataclass(frozen=True)
class Inner:
    """A nested config."""

    size: int = 3
    """A size."""


@dataclasses.dataclass(frozen=True)
class Every:
    """One field of each supported kind."""

    count: int = 1
    """An int."""
    rate: float = 0.5
    """A float."""
    flag: bool = False
    """A bool."""
    name: str = "x"
    """A string."""
    sizes: tuple[int, ...] = (64, 64)
    """A tuple."""
    pair: tuple[str, float] = ("a", 1.0)
    """A fixed tuple."""
    limit: int | None = None
    """An optional int."""
    mode: Literal["fast", "exact"] = "fast"
    """A literal."""
    inner: Inner = Inner()
    """A nested config."""


@pytest.mark.parametrize(
    "config",
    [
        Every(),
        Every(
            count=7,
            rate=3.0,
            flag=True,
            name="y",
            sizes=(),
            pair=("b", 2.5),
            limit=4,
            mode="exact",
            inner=Inner(9),
        ),
        PPOConfig(),
        *PRESETS.values(),
        RunConfig(env="Pendulum-v1", seed=12, run_dir="runs/x"),
    ],
)
def test_configs_survive_a_round_trip_through_json(config):
    data = json.loads(json.dumps(config_to_json(config)))
    assert decode_config(type(config), data, "test") == config


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"count": 1, "extra": 2}, r"has field\(s\) 'extra' that Every of this rollax version"),
        ({}, r"lacks field\(s\) 'count', 'flag'.*defaults: count=1, flag=False"),
        ({"count": 1.5}, r"field 'count' must be an integer, got 1.5"),
        ({"count": True}, r"field 'count' must be an integer, got True"),
        ({"flag": 1}, r"field 'flag' must be true or false, got 1"),
        ({"sizes": [64, "64"]}, r"field 'sizes'\[1\] must be an integer, got '64'"),
        ({"sizes": 64}, r"field 'sizes' must be a list, got 64"),
        ({"pair": ["a"]}, r"field 'pair' must have 2 entries"),
        ({"limit": "4"}, r"field 'limit' must be an integer, got '4'"),
        ({"mode": "slow"}, r"field 'mode' must be one of \['fast', 'exact'\], got 'slow'"),
        ({"inner": {"size": 1, "depth": 2}}, r"field 'inner' has field\(s\) 'depth'"),
    ],
)
def test_a_config_that_does_not_fit_names_the_field(data, message):
    full = config_to_json(Every())
    if data:
        full.update(data)
    else:
        full = {"name": "x", "rate": 0.5, "sizes": [], "pair": ["a", 1.0], "limit": None,
                "mode": "fast", "inner": {"size": 3}}  # fmt: skip
    with pytest.raises(ConfigError, match=message):
        decode_config(Every, full, "config.json: 'every'")
    assert issubclass(ConfigError, ValueError)  # the CLI turns it into status 2


def test_run_keys_are_distinct_across_streams_and_neighbouring_seeds():
    keys = [jax.random.key_data(k) for seed in range(16) for k in run_keys(seed)]
    assert len({np.asarray(k).tobytes() for k in keys}) == 16 * 3
    # Deterministic: the same seed gives the same keys.
    for a, b in zip(run_keys(5), run_keys(5), strict=True):
        np.testing.assert_array_equal(jax.random.key_data(a), jax.random.key_data(b))


@pytree_dataclass
class _State:
    env_params: Any


def _push_nothing(state, obs, key, deterministic):
    """MountainCar's 'do nothing' for every observation: episodes last until the limit."""
    return jnp.ones(jax.tree.leaves(obs)[0].shape[:2], jnp.int32)


def test_evaluation_takes_the_episode_limit_and_params_from_the_state():
    # Doing nothing, MountainCar pays -1 a step until the time limit: each return is minus
    # the episode limit that evaluation used.
    seeds, envs = 2, 3
    env = rollax.make("MountainCar-v0", num_envs=seeds * envs)
    evaluate, _ = make_evaluator(env, feedforward_policy(_push_nothing), seeds, seeds * envs)
    key = jax.random.key(0)
    # The state's limit, above the default of 200 (a fixed horizon would stop at 200).
    state = _State(env.default_params.replace(max_episode_steps=np.int32(350)))
    np.testing.assert_array_equal(evaluate(state, key, 4), np.full((seeds, 4), -350.0))
    # One limit per training environment: episode e of seed s runs with environment e % 3.
    limits = np.array([50, 120, 300, 60, 70, 80], np.int32)
    state = _State(env.default_params.replace(max_episode_steps=limits))
    returns = np.asarray(evaluate(state, key, 5))
    np.testing.assert_array_equal(
        returns, -np.array([[50, 120, 300, 50, 120], [60, 70, 80, 60, 70]], np.float32)
    )


def test_params_for_batch_deals_per_environment_values_to_each_seed():
    env = rollax.make("CartPole-v1", num_envs=4)
    params = env.default_params.replace(gravity=np.array([1.0, 2.0, 3.0, 4.0], np.float32))
    dealt = params_for_batch(params, env.default_params, 4, num_seeds=2, per_seed=3)
    np.testing.assert_array_equal(dealt.gravity, [1.0, 2.0, 1.0, 3.0, 4.0, 3.0])
    assert np.ndim(dealt.max_episode_steps) == 0  # shared values stay shared


@pytest.mark.parametrize("num_seeds", [1, 3])
def test_vmap_seeds_matches_vmap_with_and_without_a_batch_of_one(num_seeds):
    def per_seed(x, scale, key):
        return {"y": x * scale, "noise": jax.random.normal(key, (2,))}, x.sum()

    x = jnp.arange(num_seeds * 4, dtype=jnp.float32).reshape(num_seeds, 4)
    keys = jax.random.split(jax.random.key(0), num_seeds)
    expected = jax.vmap(per_seed, (0, None, 0))(x, 2.0, keys)
    got = vmap_seeds(per_seed, num_seeds, (0, None, 0))(x, 2.0, keys)
    assert jax.tree.structure(got) == jax.tree.structure(expected)
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(expected), strict=True):
        assert a.shape == b.shape
        np.testing.assert_array_equal(a, b)
    split = vmap_seeds(jax.random.split, num_seeds, out_axes=1)(keys)
    assert split.shape == (2, num_seeds)
    np.testing.assert_array_equal(
        jax.random.key_data(split),
        jax.random.key_data(jax.vmap(jax.random.split, out_axes=1)(keys)),
    )


@pytest.mark.parametrize("package", ["pqn", "td3"])
def test_an_agent_written_on_a_driver_stays_a_page_of_code(package):
    # What the drivers promise the next agent's author: PQN (on-policy) and TD3 (off-policy)
    # are each under 300 non-blank lines, config, presets, losses and agent together. Preset
    # measurements belong on the docs pages, not in the package.
    from pathlib import Path

    import rollax.agents

    root = Path(rollax.agents.__file__).parent / package
    lines = sum(1 for f in root.glob("*.py") for line in f.read_text().splitlines() if line.strip())
    assert lines < 300, f"rollax/agents/{package}/ has {lines} non-blank lines"
