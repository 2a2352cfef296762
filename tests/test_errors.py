"""Bad input is caught where it enters, with a message naming what was wrong and what would
be valid (DESIGN.md 7)."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import rollax
from rollax._struct import pytree_dataclass
from rollax.envs import Environment, EnvParams, VecEnv
from rollax.spaces import Box


def test_unknown_id_lists_close_matches():
    with pytest.raises(ValueError, match=r"Unknown environment id 'CartPole-v0'.*'CartPole-v1'"):
        rollax.make("CartPole-v0")
    with pytest.raises(ValueError, match="registered_envs"):
        rollax.make("NoSuchThing")


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "8"])
def test_bad_num_envs(bad):
    with pytest.raises(
        ValueError, match=re.escape("num_envs must be None") + ".*" + re.escape(repr(bad))
    ):
        rollax.make("CartPole-v1", num_envs=bad)


def test_unknown_autoreset_mode_and_strategy():
    with pytest.raises(ValueError, match=r"autoreset_mode must be one of .*same_step.*'sometimes'"):
        rollax.make("CartPole-v1", num_envs=2, autoreset_mode="sometimes")
    with pytest.raises(ValueError, match=r"reset_strategy must be one of .*'magic'"):
        rollax.make("CartPole-v1", num_envs=2, reset_strategy="magic")


def test_unknown_option():
    with pytest.raises(TypeError, match=r"unknown option\(s\) \['colour'\].*takes no options"):
        rollax.make("CartPole-v1", colour="red")


def test_wrong_action_shape(key):
    env = rollax.make("CartPole-v1", num_envs=4)
    state, _ = env.reset(key)
    with pytest.raises(ValueError, match=r"must have shape \(4,\).*got shape \(3,\)"):
        env.step(state, jnp.zeros(3, jnp.int32))
    with pytest.raises(ValueError, match=r"must have shape \(4,\).*got shape \(4, 1\)"):
        jax.jit(env.step)(state, jnp.zeros((4, 1), jnp.int32))  # caught at trace time


def test_wrong_action_dtype(key):
    env = rollax.make("CartPole-v1", num_envs=2)
    state, _ = env.reset(key)
    with pytest.raises(TypeError, match=r"integer dtype \(Discrete\(2\).*got dtype float32"):
        env.step(state, jnp.zeros(2, jnp.float32))
    cont = rollax.make("Pendulum-v1", num_envs=2)
    state, _ = cont.reset(key)
    with pytest.raises(TypeError, match=r"floating dtype \(Box.*got dtype int32"):
        cont.step(state, jnp.zeros((2, 1), jnp.int32))


def test_discrete_action_out_of_range(key):
    env = rollax.make("Acrobot-v1", num_envs=3)
    state, _ = env.reset(key)
    with pytest.raises(ValueError, match=r"must lie in \[0, 3\), got value\(s\) \[3, -1\]"):
        env.step(state, np.array([0, 3, -1], np.int32))


def test_non_finite_continuous_action(key):
    env = rollax.make("Pendulum-v1")
    state, _ = env.reset(key)
    with pytest.raises(ValueError, match="NaN or infinite"):
        env.step(state, np.array([np.nan], np.float32))


def test_bad_mask(key):
    env = rollax.make("CartPole-v1", num_envs=4, autoreset_mode="disabled")
    state, _ = env.reset(key)
    with pytest.raises(
        ValueError, match=r"mask must be a bool array of shape \(4,\).*int64 of shape \(4,\)"
    ):
        env.reset_where(state, np.array([1, 0, 1, 0]))
    with pytest.raises(ValueError, match=r"shape \(4,\).*got bool of shape \(2,\)"):
        env.reset_where(state, np.array([True, False]))


def test_bad_params(key):
    env = rollax.make("CartPole-v1", num_envs=4)
    pendulum = rollax.make("Pendulum-v1")
    with pytest.raises(TypeError, match=r"params must be a CartPoleParams.*got PendulumParams"):
        env.reset(key, pendulum.default_params)
    wrong = env.default_params.replace(gravity=np.ones(3, np.float32))
    with pytest.raises(
        ValueError, match=r"params.gravity has shape \(3,\); expected \(\) .* or \(4,\)"
    ):
        env.reset(key, wrong)
    with pytest.raises(TypeError, match=r"unknown field\(s\) \['gravityy'\]"):
        env.default_params.replace(gravityy=1.0)
    with pytest.raises(TypeError, match=r"max_episode_steps holds int32, got 2\.5"):
        env.default_params.replace(max_episode_steps=2.5)


def test_register_errors():
    with pytest.raises(ValueError, match="already registered"):
        rollax.register("CartPole-v1", "rollax.envs.classic.cartpole:CartPole")
    with pytest.raises(TypeError, match="entry_point must be callable"):
        rollax.register("Mine-v0", "not a module path")
    with pytest.raises(ValueError, match="non-empty string"):
        rollax.register("", "a:b")


@pytree_dataclass
class _VectorParams(EnvParams):
    max_episode_steps: Any = np.int32(10)
    target: Any = dataclasses.field(default_factory=lambda: np.zeros(3, np.float32))


@pytree_dataclass
class _VectorState:
    position: jax.Array


class _Reach(Environment[_VectorState, _VectorParams]):
    """A parameter that is a vector: its shape, not only its rank, is checked."""

    @property
    def default_params(self) -> _VectorParams:
        return _VectorParams()

    @property
    def observation_space(self) -> Box:
        return Box(-np.inf, np.inf, (3,))

    @property
    def action_space(self) -> Box:
        return Box(-1.0, 1.0, (3,))

    def reset_env(self, key: jax.Array, params: _VectorParams) -> _VectorState:
        return _VectorState(jax.random.normal(key, (3,)))

    def step_env(self, state: _VectorState, action: jax.Array, params: _VectorParams) -> tuple:
        position = state.position + action
        reward = -jnp.sum((position - params.target) ** 2)
        return _VectorState(position), reward, jnp.zeros((), bool)

    def observe(self, state: _VectorState, params: _VectorParams) -> jax.Array:
        return state.position


def test_params_of_the_right_rank_but_another_shape_are_refused(key):
    env = VecEnv(_Reach(), num_envs=4)
    state, _ = env.reset(key)  # one target for all, or one per environment, both work
    env.reset(key, env.default_params.replace(target=np.zeros((4, 3), np.float32)))
    wrong = env.default_params.replace(target=np.zeros(2, np.float32))
    with pytest.raises(ValueError, match=r"params.target has shape \(2,\); expected \(3,\)"):
        env.step(state, np.zeros((4, 3), np.float32), wrong)
