"""gymnax environments inside rollax (extra ``rollax[gymnax]``).

``rollax.make("gymnax/<id>")`` (any id in ``gymnax.registered_envs``, e.g.
``"gymnax/Breakout-MinAtar"``) wraps gymnax's own ``reset_env``/``step_env`` so that rollax's
semantics apply: every reset draws fresh randomness from the environment's key, the time limit
is rollax's (``truncated``, kept apart from gymnax's natural ``terminated``), ``final_obs`` is
the true last observation, autoreset modes and reset strategies work as for every rollax
environment, and gymnax's params live inside :class:`GymnaxParams` (data, not recompiled).

Observations are float32 (MinAtar's boolean channels become 0.0/1.0).
"""

from __future__ import annotations

import difflib
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rollax._struct import pytree_dataclass
from rollax.envs._base import Environment, EnvParams
from rollax.spaces import Box, Discrete, Space

__all__ = ["GymnaxEnv", "GymnaxParams", "GymnaxState"]

PREFIX = "gymnax/"


@pytree_dataclass
class GymnaxParams(EnvParams):
    """Parameters of a wrapped gymnax environment.

    Attributes:
        max_episode_steps: rollax's time limit (gymnax's ``max_steps_in_episode`` by default).
        inner: gymnax's own params (its dataclass; ``inner.replace(...)`` changes them).
    """

    max_episode_steps: Any = np.int32(1000)
    inner: Any = None


@pytree_dataclass
class GymnaxState:
    """A wrapped gymnax environment's state.

    Attributes:
        inner: gymnax's state.
        obs: Its current observation, float32.
        key: The key its stochastic transitions use (split every step).
    """

    inner: Any
    obs: jax.Array
    key: jax.Array


def _space(space: Any) -> Space:
    from gymnax.environments import spaces

    if isinstance(space, spaces.Discrete):
        return Discrete(int(space.n))
    if isinstance(space, spaces.Box):
        shape = tuple(space.shape)
        low = np.broadcast_to(np.asarray(space.low, np.float32), shape)
        high = np.broadcast_to(np.asarray(space.high, np.float32), shape)
        return Box(low, high, shape)
    raise TypeError(f"gymnax space {type(space).__name__} has no rollax equivalent yet.")


class GymnaxEnv(Environment[GymnaxState, GymnaxParams]):
    """A gymnax environment with rollax's semantics.

    Args:
        env_id: A gymnax id, e.g. ``"CartPole-v1"`` or ``"Breakout-MinAtar"``.
        **kwargs: Passed to ``gymnax.make``.
    """

    def __init__(self, env_id: str, **kwargs: Any) -> None:
        import gymnax

        if env_id not in gymnax.registered_envs:
            close = difflib.get_close_matches(env_id, gymnax.registered_envs, n=5, cutoff=0.5)
            hint = f" Did you mean {', '.join(repr(PREFIX + c) for c in close)}?" if close else ""
            raise ValueError(
                f"Unknown gymnax environment {env_id!r}.{hint} gymnax.registered_envs lists "
                f"{len(gymnax.registered_envs)} ids."
            )
        self.env_id = env_id
        self._env, self._params = gymnax.make(env_id, **kwargs)
        self._observation_space = _space(self._env.observation_space(self._params))
        self._action_space = _space(self._env.action_space(self._params))

    @property
    def name(self) -> str:
        return PREFIX + self.env_id

    @property
    def default_params(self) -> GymnaxParams:
        return GymnaxParams(
            max_episode_steps=np.int32(self._params.max_steps_in_episode), inner=self._params
        )

    @property
    def observation_space(self) -> Space:
        return self._observation_space

    @property
    def action_space(self) -> Space:
        return self._action_space

    def reset_env(self, key: jax.Array, params: GymnaxParams) -> GymnaxState:
        k_reset, k_steps = jax.random.split(key)
        with jax.numpy_dtype_promotion("standard"):  # gymnax relies on implicit promotion
            obs, inner = self._env.reset_env(k_reset, params.inner)
        return GymnaxState(inner, jnp.asarray(obs, jnp.float32), k_steps)

    def step_env(
        self, state: GymnaxState, action: jax.Array, params: GymnaxParams
    ) -> tuple[GymnaxState, jax.Array, jax.Array]:
        key, k_step = jax.random.split(state.key)
        with jax.numpy_dtype_promotion("standard"):  # gymnax relies on implicit promotion
            obs, inner, reward, terminated, _ = self._env.step_env(
                k_step, state.inner, action, params.inner
            )
        next_state = GymnaxState(inner, jnp.asarray(obs, jnp.float32), key)
        return next_state, jnp.asarray(reward, jnp.float32), jnp.asarray(terminated, jnp.bool_)

    def observe(self, state: GymnaxState, params: GymnaxParams) -> jax.Array:
        return state.obs


def gymnax_ids() -> list[str]:
    """``gymnax/<id>`` for every gymnax environment (empty without gymnax installed)."""
    try:
        import gymnax
    except ImportError:
        return []
    return [PREFIX + name for name in gymnax.registered_envs]
