"""gymnax environments inside rollax (extra ``rollax[gymnax]``).

``rollax.make("gymnax/<id>")`` (any id in ``gymnax.registered_envs``, e.g.
``"gymnax/Breakout-MinAtar"``) wraps gymnax's own ``reset_env``/``step_env`` so that rollax's
semantics apply: every reset draws fresh randomness from the environment's key, the time limit
is rollax's (``truncated``, kept apart from gymnax's natural ``terminated``), ``final_obs`` is
the true last observation, autoreset modes and reset strategies work as for every rollax
environment, and gymnax's params live inside :class:`GymnaxParams` (data, not recompiled).

Observations are float32, except image observations: a 3-D observation with values in
``[0, 1]`` (MinAtar's ``10 x 10 x C`` boolean channels) becomes the dict
``{"pixels/board": uint8 (H, W, C)}`` with 0 and 255, an image that rollax's vision network,
frame stacking and pixel augmentation take as they take rendered cameras (docs/design.md §6).
``pixels=False`` keeps the float32 array instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rollax._struct import pytree_dataclass
from rollax.adapters._suite import SuiteEnv, strong, suite_code, unknown_id
from rollax.envs import EnvParams
from rollax.spaces import Box, Dict, Discrete, Space

__all__ = ["OBS_FROM_STATE", "GymnaxEnv", "GymnaxParams", "GymnaxState"]

PREFIX = "gymnax/"

IMAGE_KEY = "pixels/board"
"""The observation key of gymnax's image observations (MinAtar's boards)."""


@pytree_dataclass
class GymnaxParams(EnvParams):
    """Parameters of a wrapped gymnax environment.

    Attributes:
        max_episode_steps: rollax's time limit (gymnax's ``max_steps_in_episode`` by default).
        inner: gymnax's own params (its dataclass; ``inner.replace(...)`` changes them).
    """

    max_episode_steps: Any = np.int32(1000)
    inner: Any = None


# gymnax ids whose ``get_obs(state, params)`` is exactly the observation their ``step_env``
# and ``reset_env`` return (checked for each in tests/test_gymnax_adapter.py). For them the
# adapter computes the observation from gymnax's state when asked instead of keeping it in
# the state: MinAtar's 10x10xC boards then never travel through a rollout's carry, which on
# a GPU made stepping 65,536 Breakouts memory-bound. The others (MemoryChain's observation
# is not a function of the state alone, UmbrellaChain's needs a key) keep theirs.
OBS_FROM_STATE = frozenset(
    {
        "CartPole-v1",
        "Pendulum-v1",
        "Acrobot-v1",
        "MountainCar-v0",
        "MountainCarContinuous-v0",
        "Asterix-MinAtar",
        "Breakout-MinAtar",
        "Freeway-MinAtar",
        "Seaquest-MinAtar",
        "SpaceInvaders-MinAtar",
        "Catch-bsuite",
        "DeepSea-bsuite",
    }
)


@pytree_dataclass
class GymnaxState:
    """A wrapped gymnax environment's state.

    Attributes:
        inner: gymnax's state.
        obs: Its current observation: float32, or uint8 ``(H, W, C)`` for an image;
            ``None`` for the environments of ``OBS_FROM_STATE``, whose observation is
            computed from ``inner``.
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


def _widen_low(low: float) -> Callable[[Box], Box]:
    def widen(space: Box) -> Box:
        return Box(np.minimum(space.low, low), space.high, space.shape)

    return widen


_SPACE_CORRECTIONS: dict[str, Callable[[Box], Box]] = {
    # gymnax declares [0, 2 * num_bits], but the context bits are observed as -1 or +1.
    "MemoryChain-bsuite": _widen_low(-1.0),
}
"""Observation spaces gymnax declares narrower than what the environments observe (found by
:func:`rollax.envs.check_env`), corrected so that observations lie in their space."""


class GymnaxEnv(SuiteEnv):
    """A gymnax environment with rollax's semantics.

    Args:
        env_id: A gymnax id, e.g. ``"CartPole-v1"`` or ``"Breakout-MinAtar"``.
        pixels: Observe a 3-D observation in ``[0, 1]`` as ``{"pixels/board": uint8}``
            (0 or 255); ``None`` (default) does so wherever the observation is one, ``False``
            keeps float32 arrays, ``True`` requires an image observation.
        **kwargs: Passed to ``gymnax.make``.
    """

    prefix = PREFIX

    def __init__(self, env_id: str, pixels: bool | None = None, **kwargs: Any) -> None:
        import gymnax

        if env_id not in gymnax.registered_envs:
            raise unknown_id("gymnax", PREFIX, env_id, gymnax.registered_envs)
        self.env_id = env_id
        self._env, self._params = gymnax.make(env_id, **kwargs)
        if pixels is not None and not isinstance(pixels, bool):
            raise TypeError(f"pixels must be None, True or False, got {pixels!r}")
        space = _space(self._env.observation_space(self._params))
        space = _SPACE_CORRECTIONS.get(env_id, lambda s: s)(space)
        image = _is_image(space)
        if pixels and not image:
            raise ValueError(
                f"pixels=True needs a 3-D observation with values in [0, 1] (an image such as "
                f"MinAtar's boards); {env_id!r} observes shape {space.shape}. Use pixels=None."
            )
        self.pixels = image if pixels is None else pixels
        if self.pixels:
            space = Dict({IMAGE_KEY: Box(0, 255, space.shape, np.uint8)})
        self._observation_space = space
        self._action_space = _space(self._env.action_space(self._params))

    @property
    def default_params(self) -> GymnaxParams:
        return GymnaxParams(
            max_episode_steps=np.int32(self._params.max_steps_in_episode),
            inner=strong(self._params),
        )

    def reset_env(self, key: jax.Array, params: GymnaxParams) -> GymnaxState:
        k_reset, k_steps = jax.random.split(key)
        with suite_code():
            obs, inner = self._env.reset_env(k_reset, params.inner)
        return GymnaxState(strong(inner), self._kept(obs), k_steps)

    def step_env(
        self, state: GymnaxState, action: jax.Array, params: GymnaxParams
    ) -> tuple[GymnaxState, jax.Array, jax.Array]:
        key, k_step = jax.random.split(state.key)
        with suite_code():
            obs, inner, reward, terminated, _ = self._env.step_env(
                k_step, state.inner, action, params.inner
            )
        next_state = GymnaxState(strong(inner), self._kept(obs), key)
        return next_state, jnp.asarray(reward, jnp.float32), jnp.asarray(terminated, jnp.bool_)

    def observe(self, state: GymnaxState, params: GymnaxParams) -> Any:
        obs = state.obs
        if self.env_id in OBS_FROM_STATE:
            with suite_code():
                obs = self._convert(self._env.get_obs(state.inner, params.inner))
        return {IMAGE_KEY: obs} if self.pixels else obs

    def _kept(self, obs: jax.Array) -> jax.Array | None:
        """What the state keeps of an observation: nothing where it is computed again."""
        return None if self.env_id in OBS_FROM_STATE else self._convert(obs)

    def _convert(self, obs: jax.Array) -> jax.Array:
        """The observation as stored: uint8 0/255 for an image, float32 otherwise."""
        if self.pixels:
            return jnp.round(jnp.asarray(obs, jnp.float32) * 255).astype(jnp.uint8)
        return jnp.asarray(obs, jnp.float32)


def _is_image(space: Space) -> bool:
    """A 3-D Box with values in [0, 1]: MinAtar's boolean channels."""
    return (
        isinstance(space, Box)
        and len(space.shape) == 3
        and bool(np.all(space.low == 0))
        and bool(np.all(space.high == 1))
    )


def gymnax_ids() -> list[str]:
    """``gymnax/<id>`` for every gymnax environment (empty without gymnax installed)."""
    try:
        import gymnax
    except ImportError:
        return []
    return [PREFIX + name for name in gymnax.registered_envs]
