"""The registry (ids, third-party registration) and the spaces."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import rollax
from rollax.envs.classic import CartPole, CartPoleParams
from rollax.spaces import Box, Discrete


def test_registered_envs_lists_the_classic_control_suite():
    assert set(rollax.registered_envs()) >= {
        "CartPole-v1",
        "Acrobot-v1",
        "MountainCar-v0",
        "MountainCarContinuous-v0",
        "Pendulum-v1",
    }


def test_third_party_registration_with_default_options(key):
    class LongPole(CartPole):
        def __init__(self, length: float = 0.5):
            self.length = length

        @property
        def default_params(self) -> CartPoleParams:
            return CartPoleParams().replace(length=self.length)

    rollax.register("test/LongPole-v0", LongPole, length=2.0, overwrite=True)
    env = rollax.make("test/LongPole-v0", num_envs=2)
    assert float(env.default_params.length) == 2.0
    assert float(rollax.make("test/LongPole-v0", length=1.0).default_params.length) == 1.0
    state, ts = env.reset(key)
    state, ts = env.step(state, jnp.array([0, 1], jnp.int32))
    assert ts.obs.shape == (2, 4)
    assert "test/LongPole-v0" in rollax.registered_envs()


def test_discrete_space(key):
    space = Discrete(3)
    samples = np.asarray(space.sample(key, (3000,)))
    assert samples.dtype == np.int32 and set(np.unique(samples)) == {0, 1, 2}
    assert bool(space.contains(2)) and not bool(space.contains(3)) and not bool(space.contains(-1))
    assert not bool(space.contains(1.0)) and not bool(space.contains(np.array([1])))
    assert bool(jax.jit(space.contains)(jnp.int32(1)))


def test_box_space_sampling_respects_bounds(key):
    space = Box(
        low=np.array([-1.0, 0.0, -np.inf, -np.inf]), high=np.array([1.0, np.inf, 5.0, np.inf])
    )
    assert space.shape == (4,) and space.dtype == np.float32
    x = np.asarray(space.sample(key, (2000,)))
    assert x.shape == (2000, 4) and x.dtype == np.float32
    assert np.all((x[:, 0] >= -1) & (x[:, 0] <= 1))
    assert np.all(x[:, 1] >= 0) and np.all(x[:, 2] <= 5)
    assert x[:, 3].min() < -1 and x[:, 3].max() > 1  # unbounded: normal
    assert all(bool(space.contains(row)) for row in x[:20])
    assert not bool(space.contains(np.array([2.0, 0.0, 0.0, 0.0], np.float32)))
    assert not bool(space.contains(np.zeros(3, np.float32)))


def test_box_rejects_bad_bounds_and_dtype():
    import pytest

    with pytest.raises(ValueError, match="low must be <= high"):
        Box(1.0, 0.0, (2,))
    with pytest.raises(TypeError, match="floating or integer dtype"):
        Box(0, 1, (2,), dtype=np.bool_)
    with pytest.raises(ValueError, match="needs finite bounds"):
        Box(-np.inf, 0, (2,), dtype=np.int32)
    with pytest.raises(ValueError, match="positive integer"):
        Discrete(0)
