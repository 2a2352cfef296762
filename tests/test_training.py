"""The shared training layer: configuration files decoded by field type, a run's keys."""

from __future__ import annotations

import dataclasses
import json
from typing import Literal

import jax
import numpy as np
import pytest

from rollax.agents.ppo import PRESETS, PPOConfig
from rollax.runs import RunConfig
from rollax.training import ConfigError, config_to_json, decode_config, run_keys


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
