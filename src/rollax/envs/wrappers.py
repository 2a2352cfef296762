"""Environment wrappers that change what one agent step is: action repeat, frame stacking.

They wrap an :class:`~rollax.envs.Environment` (not a batch), so the result batches, resets
and autoresets through :class:`~rollax.VecEnv` like any environment, every reset strategy
included::

    env = VecEnv(FrameStack(ActionRepeat(PixelCartPole(), 4), 3), num_envs=64)

Both keep "advance the state" apart from "compute the observation": ``ActionRepeat``
advances the dynamics ``repeat`` times and renders once, and ``FrameStack`` renders each new
frame once, in the step that produces it.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rollax._struct import pytree_dataclass
from rollax.envs._base import Environment, EnvParams
from rollax.spaces import Box, Dict, Space

__all__ = ["ActionRepeat", "FrameStack", "FrameStackState"]


class _Wrapper(Environment):
    """Forwards everything to ``env``."""

    def __init__(self, env: Environment) -> None:
        if not isinstance(env, Environment):
            raise TypeError(f"env must be a rollax Environment, got {type(env).__name__}")
        self.env = env

    @property
    def default_params(self) -> EnvParams:
        """The wrapped environment's."""
        return self.env.default_params

    @property
    def observation_space(self) -> Space:
        """The wrapped environment's."""
        return self.env.observation_space

    @property
    def action_space(self) -> Space:
        """The wrapped environment's."""
        return self.env.action_space

    @property
    def costly_reset(self) -> bool:  # type: ignore[override]
        """The wrapped environment's."""
        return self.env.costly_reset

    @property
    def reset_chunk(self) -> int | None:  # type: ignore[override]
        """The wrapped environment's."""
        return self.env.reset_chunk

    def reset_env(self, key: jax.Array, params: EnvParams) -> Any:
        """The wrapped environment's."""
        return self.env.reset_env(key, params)

    def step_env(self, state: Any, action: jax.Array, params: EnvParams) -> tuple:
        """The wrapped environment's."""
        return self.env.step_env(state, action, params)

    def observe(self, state: Any, params: EnvParams) -> Any:
        """The wrapped environment's."""
        return self.env.observe(state, params)

    def _inner_state(self, state: Any) -> Any:
        return state

    @property
    def render(self) -> Any:
        """The wrapped environment's ``render(state, params)``, or None if it has none."""
        inner = getattr(self.env, "render", None)
        if not callable(inner):
            return None
        return lambda state, params: inner(self._inner_state(state), params)


class ActionRepeat(_Wrapper):
    """Repeat each action ``repeat`` times; one observation per agent step.

    The reward is the sum over the repeats. A repeat that reaches a terminal state stops
    there: the remaining repeats leave the state as it is and add no reward. The dynamics run
    ``repeat`` times per agent step, ``observe`` (the rendering) once.

    An episode lasts as long as without repeats: the default time limit is the wrapped
    environment's divided by ``repeat``, rounded up (Pendulum's 200 steps become 50 agent
    steps at ``repeat=4``, so returns keep their scale), as Brax's ``EpisodeWrapper`` counts
    ``episode_length`` in dynamics steps (1,000 control steps of the DeepMind Control Suite
    are 250 agent steps at ``repeat=4``, 334 at ``repeat=3``: 1,002 control steps).
    ``max_episode_steps`` of the params counts agent steps: params given explicitly are used
    as they are.

    Args:
        env: The environment to wrap.
        repeat: Dynamics steps per agent step, at least 1.
    """

    def __init__(self, env: Environment, repeat: int) -> None:
        super().__init__(env)
        if isinstance(repeat, bool) or not isinstance(repeat, (int, np.integer)) or repeat < 1:
            raise ValueError(f"repeat must be an integer >= 1, got {repeat!r}")
        self.repeat = int(repeat)

    @property
    def default_params(self) -> EnvParams:
        """The wrapped environment's, ``max_episode_steps`` divided by ``repeat`` (rounded up)."""
        params = self.env.default_params
        return params.replace(max_episode_steps=-(-params.max_episode_steps // self.repeat))

    @property
    def name(self) -> str:
        """``ActionRepeat(<inner name>, k)``."""
        return f"ActionRepeat({self.env.name}, {self.repeat})"

    def step_env(self, state: Any, action: jax.Array, params: EnvParams) -> tuple:
        """``repeat`` dynamics steps: ``(state, summed reward, terminated)``."""

        def body(carry: tuple, _: None) -> tuple:
            state, reward, terminated = carry
            nxt, r, term = self.env.step_env(state, action, params)
            state = jax.tree.map(lambda a, b: jnp.where(terminated, a, b), state, nxt)
            reward = reward + jnp.where(terminated, jnp.float32(0), r)
            return (state, reward, terminated | term), None

        init = (state, jnp.zeros((), jnp.float32), jnp.zeros((), bool))
        (state, reward, terminated), _ = jax.lax.scan(body, init, None, length=self.repeat)
        return state, reward, terminated


@pytree_dataclass
class FrameStackState:
    """The wrapped environment's state and the last ``num_frames`` observations.

    Attributes:
        inner: The wrapped environment's state.
        frames: The stacked observation, as :meth:`FrameStack.observe` returns it.
    """

    inner: Any
    frames: Any


class FrameStack(_Wrapper):
    """Observe the last ``num_frames`` observations, stacked along the last axis.

    Each observation leaf of shape ``(..., C)`` becomes ``(..., C * num_frames)``, oldest
    first: an image ``(H, W, 3)`` stacks to ``(H, W, 3 * num_frames)``, ready for a CNN, and a
    vector ``(n,)`` to ``(n * num_frames,)``. A new episode starts with ``num_frames`` copies
    of its first observation (Gymnasium's ``padding_type="reset"``). Each frame is computed
    once, by the step that produces it; ``observe`` only reads the stack.

    Args:
        env: The environment to wrap; observation leaves need at least one axis.
        num_frames: Observations kept, at least 1.
    """

    def __init__(self, env: Environment, num_frames: int) -> None:
        super().__init__(env)
        if (
            isinstance(num_frames, bool)
            or not isinstance(num_frames, (int, np.integer))
            or num_frames < 1
        ):
            raise ValueError(f"num_frames must be an integer >= 1, got {num_frames!r}")
        self.num_frames = int(num_frames)
        self._space = _stacked_space(env.observation_space, self.num_frames)

    @property
    def name(self) -> str:
        """``FrameStack(<inner name>, k)``."""
        return f"FrameStack({self.env.name}, {self.num_frames})"

    @property
    def observation_space(self) -> Space:
        """The wrapped space with every last axis ``num_frames`` times longer."""
        return self._space

    def reset_env(self, key: jax.Array, params: EnvParams) -> FrameStackState:
        """The wrapped reset, its first observation repeated ``num_frames`` times."""
        inner = self.env.reset_env(key, params)
        first = self.env.observe(inner, params)
        frames = jax.tree.map(lambda x: jnp.concatenate([x] * self.num_frames, axis=-1), first)
        return FrameStackState(inner=inner, frames=frames)

    def step_env(self, state: FrameStackState, action: jax.Array, params: EnvParams) -> tuple:
        """Step, render the new frame once, drop the oldest."""
        inner, reward, terminated = self.env.step_env(state.inner, action, params)
        frame = self.env.observe(inner, params)

        def push(stack: jax.Array, x: jax.Array) -> jax.Array:
            return jnp.concatenate([stack[..., x.shape[-1] :], x], axis=-1)

        frames = jax.tree.map(push, state.frames, frame)
        return FrameStackState(inner=inner, frames=frames), reward, terminated

    def observe(self, state: FrameStackState, params: EnvParams) -> Any:
        """The stack (no rendering)."""
        return state.frames

    def _inner_state(self, state: FrameStackState) -> Any:
        return state.inner


def _stacked_space(space: Space, k: int) -> Space:
    if isinstance(space, Dict):
        return Dict({name: _stacked_space(s, k) for name, s in space.spaces.items()})
    if isinstance(space, Box) and space.shape:
        return Box(
            np.concatenate([space.low] * k, axis=-1),
            np.concatenate([space.high] * k, axis=-1),
            (*space.shape[:-1], space.shape[-1] * k),
            space.dtype,
        )
    raise ValueError(
        f"FrameStack stacks along the last axis of Box observations (alone or in a Dict); "
        f"got {space!r}"
    )
