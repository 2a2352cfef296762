"""Brax environments through rollax.make: fresh resets (no cached first state), truncation."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import rollax

# Brax, jaxopt and MuJoCo announce their own deprecations; they are not rollax's to fix.
pytestmark = [
    pytest.mark.extra("brax"),
    pytest.mark.filterwarnings("ignore:Brax System:UserWarning"),
    pytest.mark.filterwarnings("ignore:JAXopt is no longer maintained:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:Accessing `ncon`:DeprecationWarning"),
]


@pytest.fixture(scope="module")
def env():
    return rollax.make("brax/inverted_pendulum", num_envs=3)


def test_every_episode_starts_fresh_and_endings_are_told_apart(env):
    # Both under jit: Brax's reset is a forward pass of its physics, slow op by op.
    reset, step = jax.jit(env.reset), jax.jit(env.step)
    params = env.default_params.replace(max_episode_steps=3)
    state, ts = reset(jax.random.key(0), params)
    starts = [np.asarray(ts.obs)]
    for _ in range(9):  # a centred pole stands for 3 steps: three truncated episodes
        state, ts = step(state, jnp.zeros((3, 1)), params)
        if bool(ts.done.any()):
            assert bool(ts.truncated.all()) and not bool(ts.terminated.any())
            starts.append(np.asarray(ts.obs))
    assert len(starts) == 4
    flat = np.concatenate(starts)
    assert len({tuple(row) for row in flat}) == len(flat)  # Brax's cached start is gone

    state, ts = reset(jax.random.key(1), env.default_params)
    lengths = []
    for _ in range(12):  # pushing hard topples the pole: terminated, not truncated
        state, ts = step(state, jnp.full((3, 1), 0.3), env.default_params)
        if bool(ts.done.any()):
            assert bool(ts.terminated.all()) and not bool(ts.truncated.any())
            assert not np.allclose(np.asarray(ts.final_obs), np.asarray(ts.obs))
            lengths.append(int(ts.info["episode_length"][0]))
    assert lengths and all(0 < n < 12 for n in lengths)


def test_an_accelerator_batches_the_physics_resets_in_a_pool(env, monkeypatch):
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert rollax.envs.VecEnv(env.env, num_envs=1024).reset_strategy == "pool"


def test_unknown_brax_name_lists_close_matches():
    with pytest.raises(ValueError, match="Did you mean 'brax/inverted_pendulum'"):
        rollax.make("brax/invertd_pendulum")
