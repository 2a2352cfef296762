"""The environment checker: every builtin passes, and each deliberately broken environment
is caught with a finding that names the environment and the method."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import rollax
from rollax._struct import pytree_dataclass, static_field
from rollax.envs import EnvCheckError, Environment, EnvParams, _registry, check_env, check_spaces
from rollax.spaces import Box, Discrete


@pytree_dataclass
class WalkParams(EnvParams):
    max_episode_steps: Any = np.int32(8)
    goal: Any = np.int32(3)


@pytree_dataclass
class WalkState:
    position: jax.Array
    key: jax.Array


class Walk(Environment):
    """A valid environment: a random start, a key in the state, a render method."""

    @property
    def default_params(self) -> Any:
        return WalkParams()

    @property
    def observation_space(self) -> Any:
        return Box(0.0, 3.0, (1,), jnp.float32)

    @property
    def action_space(self) -> Any:
        return Discrete(2)

    def reset_env(self, key, params):
        k_start, k_state = jax.random.split(key)
        return WalkState(jax.random.randint(k_start, (), 0, 2), k_state)

    def step_env(self, state, action, params):
        position = jnp.clip(state.position + 2 * action - 1, 0, 3)
        done = position >= params.goal
        return state.replace(position=position), done.astype(jnp.float32), done

    def observe(self, state, params):
        return state.position.astype(jnp.float32)[None]

    def render(self, state, params):
        return jnp.full((4, 4, 3), state.position * 60, jnp.uint8)


# --- one defect each ---


class ObserveShape(Walk):
    """The Flax error of a user: the observation has 2 entries, the space says 1."""

    def observe(self, state, params):
        return jnp.zeros(2, jnp.float32)


class ObserveDtype(Walk):
    def observe(self, state, params):
        return state.position[None]  # int32 where the space says float32


class RewardDtype(Walk):
    def step_env(self, state, action, params):
        state, reward, done = super().step_env(state, action, params)
        return state, reward.astype(jnp.int32), done


class TerminatedDtype(Walk):
    def step_env(self, state, action, params):
        state, reward, done = super().step_env(state, action, params)
        return state, reward, done.astype(jnp.float32)


class StateChangesDtype(Walk):
    def step_env(self, state, action, params):
        state, reward, done = super().step_env(state, action, params)
        return state.replace(position=state.position.astype(jnp.float32)), reward, done


class ObserveOutOfBounds(Walk):
    def observe(self, state, params):
        return (10.0 * state.position.astype(jnp.float32))[None]


RNG = np.random.default_rng(0)


class NumpyRandomness(Walk):
    def step_env(self, state, action, params):
        state, reward, done = super().step_env(state, action, params)
        return state, reward + np.float32(RNG.uniform()), done


class HiddenCounter(Walk):
    calls = 0

    def step_env(self, state, action, params):
        self.calls += 1
        state, reward, done = super().step_env(state, action, params)
        return state, reward + np.float32(self.calls), done


class ParamsAsPython(Walk):
    def step_env(self, state, action, params):
        if params.goal > 2:  # a traced value in Python control flow
            return super().step_env(state, action, params)
        return state, jnp.float32(0), jnp.bool_(False)


@pytree_dataclass
class StaticParams(EnvParams):
    max_episode_steps: Any = np.int32(8)
    goal: int = static_field(default=3)


class StaticGoal(Walk):
    @property
    def default_params(self) -> Any:
        return StaticParams()


class FloatRender(Walk):
    def render(self, state, params):
        return jnp.zeros((4, 4, 3), jnp.float32)


class ConstantKey(Walk):
    def reset_env(self, key, params):
        return WalkState(jnp.zeros((), jnp.int32), jax.random.key(0))  # ignores its key


class NotEnvParams(Walk):
    @property
    def default_params(self) -> Any:
        return {"max_episode_steps": 8}


class NoTimeLimit(Walk):
    @property
    def default_params(self) -> Any:
        return WalkParams(max_episode_steps=np.int32(0))


class NanReward(Walk):
    def step_env(self, state, action, params):
        state, reward, done = super().step_env(state, action, params)
        return state, reward * jnp.nan, done


class ForeignSpace(Walk):
    @property
    def action_space(self) -> Any:
        return (0, 1)


DEFECTS = [
    (ObserveShape, "observe", "observes float32(2,), where the space describes float32(1,)"),
    (ObserveDtype, "observe", "observes int32(1,), where the space describes float32(1,)"),
    (RewardDtype, "step_env", "reward of int32(); expected float32()"),
    (TerminatedDtype, "step_env", "terminated as float32(); expected bool()"),
    (StateChangesDtype, "step_env", "next state that differs from reset_env's"),
    (ObserveOutOfBounds, "observe", "lies outside the observation space"),
    (NumpyRandomness, "step_env", "it is not a pure function"),
    (HiddenCounter, "step_env", "in two calls with the same arguments"),
    (ParamsAsPython, "step_env", "raised TracerBoolConversionError"),
    (StaticGoal, "default_params", "field 'goal' is static"),
    (FloatRender, "render", "returns float32(4, 4, 3); expected uint8 (H, W, 3)"),
    (ConstantKey, "reset_env", "is the same for every reset key"),
    (NotEnvParams, "default_params", "expected a subclass of rollax.EnvParams"),
    (NoTimeLimit, "default_params", "max_episode_steps is 0 (int32); expected a positive integer"),
    (NanReward, "step_env", "reward that is not finite"),
    (ForeignSpace, "action_space", "expected a rollax.spaces Box, Discrete or Dict"),
]


def test_a_valid_environment_passes():
    assert check_env(Walk(), steps=64) == ()


@pytest.mark.parametrize(
    ("env_class", "method", "message"), DEFECTS, ids=lambda x: getattr(x, "__name__", None)
)
def test_each_defect_is_found_and_named(env_class, method, message):
    findings = check_env(env_class(), steps=64, raise_error=False)
    assert findings, f"{env_class.__name__}: nothing found"
    named = [f for f in findings if f.method == method and message in f.message]
    assert named, [str(f) for f in findings]
    assert str(named[0]).startswith(f"{env_class.__name__}: {method}: ")


def test_findings_are_raised_together_by_default():
    with pytest.raises(
        EnvCheckError, match=r"ObserveShape .* \(2 findings\):\n- ObserveShape: "
    ) as e:
        check_env(ObserveShape())
    assert [f.method for f in e.value.findings] == ["observe", "observe"]


def test_make_and_register_catch_a_shape_mismatch_before_anything_compiles():
    # What users met as ScopeParamShapeError inside Flax is now a message naming observe.
    before = dict(_registry._REGISTRY)
    try:
        with pytest.raises(EnvCheckError, match="ObserveShape-v0: observe: after reset_env"):
            rollax.register("ObserveShape-v0", ObserveShape)
        assert "ObserveShape-v0" not in rollax.registered_envs()
        rollax.register("ObserveShape-v0", ObserveShape, check=False)
        with pytest.raises(EnvCheckError, match="ObserveShape-v0: observe: after reset_env"):
            rollax.make("ObserveShape-v0")
        assert rollax.make("ObserveShape-v0", check=False).env_id == "ObserveShape-v0"
        rollax.register("Walk-v0", Walk)
        assert check_spaces("Walk-v0") == ()
    finally:
        _registry._REGISTRY.clear()
        _registry._REGISTRY.update(before)


@pytest.mark.parametrize("env_id", rollax.registered_envs())
def test_every_builtin_environment_passes(env_id):
    assert check_env(env_id, steps=64) == ()


@pytest.mark.extra("gymnax")
@pytest.mark.parametrize("env_id", ["gymnax/MemoryChain-bsuite", "gymnax/Breakout-MinAtar"])
def test_adapted_environments_pass(env_id):
    assert check_env(env_id, steps=64) == ()
