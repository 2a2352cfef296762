"""What ``rollax.make`` returns.

An environment with keys, time limit, episode statistics, autoreset and (optionally) a batch
of independent instances.

All of that lives here, once, for every :class:`~rollax.envs.Environment`; there is no stack
of wrappers to forward attributes through.
"""

from __future__ import annotations

from typing import Any, Literal

import jax
import jax.numpy as jnp
import numpy as np

from rollax._struct import pytree_dataclass
from rollax.envs._base import Environment, EnvParams
from rollax.spaces import Box, Discrete, Space
from rollax.types import PRNGKey, TimeStep

__all__ = ["AUTORESET_MODES", "RESET_STRATEGIES", "EnvState", "VecEnv"]

AutoresetMode = Literal["same_step", "next_step", "disabled"]
AUTORESET_MODES: tuple[str, ...] = ("same_step", "next_step", "disabled")
"""``same_step`` (default): an episode that ends returns its true ``final_obs`` and the new
episode's first ``obs`` in the same step. ``next_step``: Gymnasium 1.0's default, the step after
the end is a reset step whose action is ignored. ``disabled``: no automatic reset; call
:meth:`VecEnv.reset_where` with a mask."""

RESET_STRATEGIES: tuple[str, ...] = ("every_step",)
"""How a fresh reset is computed in a batch. ``every_step``: compute a reset for every
environment on every step and keep it where the episode ended."""


@pytree_dataclass
class EnvState:
    """The state of one environment or, with a leading ``(num_envs,)`` axis, of a batch.

    Attributes:
        core: The :class:`~rollax.envs.Environment`'s own state pytree.
        key: This environment's key. Only resets consume it: each reset splits it into the
            next key and a reset key, so no key is ever used twice.
        episode_length: Steps taken in the current episode; int32.
        episode_return: Sum of rewards in the current episode; float32.
        needs_reset: ``next_step`` mode only: the previous step ended an episode, so this
            step resets instead of acting. Always false in the other modes; bool.
    """

    core: Any
    key: PRNGKey
    episode_length: jax.Array
    episode_return: jax.Array
    needs_reset: jax.Array


class VecEnv:
    """An environment as users step it: pure ``reset`` and ``step`` with rollax's contracts.

    * Every step is a real transition with ``terminated`` kept apart from ``truncated`` and
      the true ``final_obs`` (DESIGN.md 1).
    * Every reset draws a fresh initial state with a key used nowhere else, independently for
      every environment of a batch (DESIGN.md 2).
    * ``params`` is data: changing it does not recompile, and any field may carry one value
      per environment (DESIGN.md 3).

    ``reset`` and ``step`` are not jitted themselves, so they compose into the caller's
    ``jit``/``scan``/``vmap``. Inputs are checked when they enter (shape and dtype at trace
    time, values when concrete), so nothing costly is added to the compiled step.

    Args:
        env: The environment definition.
        num_envs: ``None`` for a single environment (no batch axis) or a positive number of
            independent environments (leading batch axis on every array).
        autoreset_mode: One of :data:`AUTORESET_MODES`.
        reset_strategy: One of :data:`RESET_STRATEGIES`.
        env_id: The registered id, for messages.

    Examples:
        >>> import jax, rollax
        >>> env = rollax.make("CartPole-v1", num_envs=4)
        >>> state, ts = env.reset(jax.random.key(0))
        >>> state, ts = jax.jit(env.step)(state, jax.numpy.zeros(4, "int32"))
        >>> ts.obs.shape, ts.terminated.dtype
        ((4, 4), dtype('bool'))
    """

    def __init__(
        self,
        env: Environment,
        num_envs: int | None = None,
        autoreset_mode: AutoresetMode = "same_step",
        reset_strategy: str = "every_step",
        env_id: str | None = None,
    ) -> None:
        if not isinstance(env, Environment):
            raise TypeError(
                f"VecEnv: env must be a rollax.envs.Environment, got {type(env).__name__}."
            )
        if num_envs is not None and (
            isinstance(num_envs, bool)
            or not isinstance(num_envs, (int, np.integer))
            or num_envs < 1
        ):
            raise ValueError(
                f"num_envs must be None (one unbatched environment) or a positive integer, "
                f"got {num_envs!r}."
            )
        if autoreset_mode not in AUTORESET_MODES:
            raise ValueError(
                f"autoreset_mode must be one of {AUTORESET_MODES}, got {autoreset_mode!r}."
            )
        if reset_strategy not in RESET_STRATEGIES:
            raise ValueError(
                f"reset_strategy must be one of {RESET_STRATEGIES}, got {reset_strategy!r}."
            )
        self.env = env
        self.num_envs = None if num_envs is None else int(num_envs)
        self.autoreset_mode = autoreset_mode
        self.reset_strategy = reset_strategy
        self.env_id = env_id or env.name

    def __repr__(self) -> str:
        return (
            f"VecEnv({self.env_id!r}, num_envs={self.num_envs}, "
            f"autoreset_mode={self.autoreset_mode!r}, reset_strategy={self.reset_strategy!r})"
        )

    # ------------------------------------------------------------------ description

    @property
    def default_params(self) -> EnvParams:
        """The environment's default :class:`~rollax.envs.EnvParams`."""
        return self.env.default_params

    @property
    def observation_space(self) -> Space:
        """Space of one environment's observation (no batch axis)."""
        return self.env.observation_space

    @property
    def action_space(self) -> Space:
        """Space of one environment's action (no batch axis)."""
        return self.env.action_space

    @property
    def batch_shape(self) -> tuple[int, ...]:
        """``()`` for a single environment, ``(num_envs,)`` for a batch."""
        return () if self.num_envs is None else (self.num_envs,)

    def sample_actions(self, key: PRNGKey) -> jax.Array:
        """Uniformly random actions for every environment, shape ``batch_shape + action shape``."""
        return self.action_space.sample(key, self.batch_shape)

    # ------------------------------------------------------------------ public API

    def reset(self, key: PRNGKey, params: EnvParams | None = None) -> tuple[EnvState, TimeStep]:
        """Start an episode in every environment.

        Args:
            key: A JAX key; split into one independent key per environment.
            params: Environment parameters; ``None`` for the defaults.

        Returns:
            ``(state, timestep)``: the timestep has the first observations, zero rewards and
            false flags.
        """
        params, axes = self._check_params(params)
        if self.num_envs is None:
            return self._reset_one(key, params)
        keys = jax.random.split(key, self.num_envs)
        return jax.vmap(self._reset_one, in_axes=(0, axes))(keys, params)

    def step(
        self, state: EnvState, action: jax.Array, params: EnvParams | None = None
    ) -> tuple[EnvState, TimeStep]:
        """Advance every environment one step, resetting per ``autoreset_mode``.

        Args:
            state: From :meth:`reset` or a previous :meth:`step`.
            action: One action per environment: shape ``batch_shape + action_space.shape``,
                an integer dtype for a discrete space, a floating dtype for a box.
            params: Environment parameters; ``None`` for the defaults.

        Returns:
            ``(state, timestep)``.
        """
        action = self._check_action(action)
        params, axes = self._check_params(params)
        step_one = {
            "same_step": self._step_same_step,
            "next_step": self._step_next_step,
            "disabled": self._step_no_reset,
        }[self.autoreset_mode]
        if self.num_envs is None:
            return step_one(state, action, params)
        return jax.vmap(step_one, in_axes=(0, 0, axes))(state, action, params)

    def reset_where(
        self, state: EnvState, mask: jax.Array, params: EnvParams | None = None
    ) -> tuple[EnvState, TimeStep]:
        """Reset only the environments where ``mask`` is true, each with a fresh key.

        This is the partial reset of the ``disabled`` mode (Gymnasium's
        ``reset(options={"reset_mask": mask})``); it works in every mode.

        Args:
            state: The current state.
            mask: bool of shape ``batch_shape``.
            params: Environment parameters; ``None`` for the defaults.

        Returns:
            ``(state, timestep)``: ``obs`` is the new first observation where reset and the
            current observation elsewhere; rewards are zero and flags false.
        """
        mask = self._check_mask(mask)
        params, axes = self._check_params(params)
        if self.num_envs is None:
            return self._reset_where_one(state, mask, params)
        return jax.vmap(self._reset_where_one, in_axes=(0, 0, axes))(state, mask, params)

    # ------------------------------------------------------------------ one environment

    def _fresh_core(self, key: PRNGKey, params: EnvParams) -> tuple[PRNGKey, Any, Any]:
        """Split ``key`` once: a new initial state from one child, the other kept."""
        next_key, reset_key = jax.random.split(key)
        core = self.env.reset_env(reset_key, params)
        return next_key, core, self.env.observe(core, params)

    def _reset_one(self, key: PRNGKey, params: EnvParams) -> tuple[EnvState, TimeStep]:
        key, core, obs = self._fresh_core(key, params)
        state = EnvState(
            core=core,
            key=key,
            episode_length=jnp.zeros((), jnp.int32),
            episode_return=jnp.zeros((), jnp.float32),
            needs_reset=jnp.zeros((), jnp.bool_),
        )
        return state, _start_timestep(obs)

    def _transition(
        self, state: EnvState, action: jax.Array, params: EnvParams
    ) -> tuple[EnvState, TimeStep]:
        """One real transition with time limit and statistics, no reset."""
        core, reward, terminated = self.env.step_env(state.core, action, params)
        reward = jnp.asarray(reward, jnp.float32)
        length = state.episode_length + 1
        episode_return = state.episode_return + reward
        truncated = length >= params.max_episode_steps
        obs = self.env.observe(core, params)
        next_state = EnvState(core, state.key, length, episode_return, state.needs_reset)
        timestep = TimeStep(
            obs=obs,
            reward=reward,
            terminated=jnp.asarray(terminated, jnp.bool_),
            truncated=truncated,
            final_obs=obs,
            info={"episode_return": episode_return, "episode_length": length},
        )
        return next_state, timestep

    def _step_no_reset(
        self, state: EnvState, action: jax.Array, params: EnvParams
    ) -> tuple[EnvState, TimeStep]:
        return self._transition(state, action, params)

    def _step_same_step(
        self, state: EnvState, action: jax.Array, params: EnvParams
    ) -> tuple[EnvState, TimeStep]:
        state, timestep = self._transition(state, action, params)
        done = timestep.done

        def fresh(state: EnvState) -> tuple[EnvState, Any]:
            restarted, start = self._reset_one(state.key, params)
            return restarted, start.obs

        def keep(state: EnvState) -> tuple[EnvState, Any]:
            return state, timestep.obs

        # Under vmap this becomes a select: every environment computes a reset each step
        # (the "every_step" strategy) and keeps it only where its episode ended.
        state, obs = jax.lax.cond(done, fresh, keep, state)
        return state, timestep.replace(obs=obs)

    def _step_next_step(
        self, state: EnvState, action: jax.Array, params: EnvParams
    ) -> tuple[EnvState, TimeStep]:
        def reset_step(state: EnvState) -> tuple[EnvState, TimeStep]:
            return self._reset_one(state.key, params)

        def real_step(state: EnvState) -> tuple[EnvState, TimeStep]:
            state, timestep = self._transition(state, action, params)
            return state.replace(needs_reset=timestep.done), timestep

        return jax.lax.cond(state.needs_reset, reset_step, real_step, state)

    def _reset_where_one(
        self, state: EnvState, mask: jax.Array, params: EnvParams
    ) -> tuple[EnvState, TimeStep]:
        def fresh(state: EnvState) -> tuple[EnvState, TimeStep]:
            return self._reset_one(state.key, params)

        def keep(state: EnvState) -> tuple[EnvState, TimeStep]:
            return state, _start_timestep(self.env.observe(state.core, params))

        return jax.lax.cond(mask, fresh, keep, state)

    # ------------------------------------------------------------------ input checks

    def _check_params(self, params: EnvParams | None) -> tuple[EnvParams, Any]:
        """Defaults for ``None``; the ``vmap`` axis of every leaf (0 if batched, else None)."""
        default = self.env.default_params
        if params is None:
            params = default
        if type(params) is not type(default):
            raise TypeError(
                f"params must be a {type(default).__name__} for {self.env_id}, "
                f"got {type(params).__name__}; start from env.default_params.replace(...)."
            )
        if self.num_envs is None:
            return params, None

        def axis(path: Any, leaf: Any, ref: Any) -> int | None:
            ndim, ref_ndim = np.ndim(leaf), np.ndim(ref)
            if ndim == ref_ndim:
                return None
            if ndim == ref_ndim + 1 and np.shape(leaf)[0] == self.num_envs:
                return 0
            raise ValueError(
                f"params{jax.tree_util.keystr(path)} has shape {np.shape(leaf)}; expected "
                f"{np.shape(ref)} (one value for all environments) or "
                f"{(self.num_envs, *np.shape(ref))} (one per environment)."
            )

        axes = jax.tree_util.tree_map_with_path(axis, params, default)
        return params, axes

    def _check_action(self, action: Any) -> jax.Array:
        space = self.action_space
        expected_shape = self.batch_shape + space.shape
        if not hasattr(action, "dtype"):
            action = np.asarray(action)
        dtype = np.dtype(action.dtype)
        if isinstance(space, Discrete) and not np.issubdtype(dtype, np.integer):
            raise TypeError(
                f"action for {self.env_id} must have an integer dtype ({space.describe()}), "
                f"got dtype {dtype}."
            )
        if isinstance(space, Box) and not np.issubdtype(dtype, np.floating):
            raise TypeError(
                f"action for {self.env_id} must have a floating dtype ({space.describe()}), "
                f"got dtype {dtype}."
            )
        if tuple(action.shape) != expected_shape:
            raise ValueError(
                f"action for {self.env_id} must have shape {expected_shape} "
                f"(batch {self.batch_shape} + action {space.shape}), got shape "
                f"{tuple(action.shape)}."
            )
        if not isinstance(action, jax.core.Tracer):
            values = np.asarray(action)
            if (
                isinstance(space, Discrete)
                and values.size
                and (values.min() < 0 or values.max() >= space.n)
            ):
                bad = values[(values < 0) | (values >= space.n)]
                raise ValueError(
                    f"action for {self.env_id} must lie in [0, {space.n}), got value(s) "
                    f"{bad[:8].tolist()}."
                )
            if isinstance(space, Box) and not np.all(np.isfinite(values)):
                raise ValueError(f"action for {self.env_id} contains NaN or infinite values.")
        return jnp.asarray(action, space.dtype)

    def _check_mask(self, mask: Any) -> jax.Array:
        if not hasattr(mask, "dtype"):
            mask = np.asarray(mask)
        if tuple(mask.shape) != self.batch_shape or np.dtype(mask.dtype) != np.bool_:
            raise ValueError(
                f"mask must be a bool array of shape {self.batch_shape} (one flag per "
                f"environment), got {np.dtype(mask.dtype)} of shape {tuple(mask.shape)}."
            )
        return jnp.asarray(mask)


def _start_timestep(obs: Any) -> TimeStep:
    """The timestep of a reset: first observation, zero reward, false flags."""
    false = jnp.zeros((), jnp.bool_)
    return TimeStep(
        obs=obs,
        reward=jnp.zeros((), jnp.float32),
        terminated=false,
        truncated=false,
        final_obs=obs,
        info={
            "episode_return": jnp.zeros((), jnp.float32),
            "episode_length": jnp.zeros((), jnp.int32),
        },
    )
