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
from rollax.envs._resets import (
    ResetStrategy,
    Starts,
    default_reset_strategy,
    make_reset_strategy,
    select,
)
from rollax.spaces import Box, Discrete, Space
from rollax.types import PRNGKey, TimeStep

__all__ = ["AUTORESET_MODES", "EnvState", "VecEnv"]

AutoresetMode = Literal["same_step", "next_step", "disabled"]
AUTORESET_MODES: tuple[str, ...] = ("same_step", "next_step", "disabled")
"""``same_step`` (default): an episode that ends returns its true ``final_obs`` and the new
episode's first ``obs`` in the same step. ``next_step``: Gymnasium 1.0's default, the step after
the end is a reset step whose action is ignored. ``disabled``: no automatic reset; call
:meth:`VecEnv.reset_where` with a mask."""


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
        resets: The reset strategy's own state: each environment's first state for
            ``cached``, a :class:`~rollax.envs.ResetPool` shared by the batch for ``pool``,
            ``None`` for the others.
    """

    core: Any
    key: PRNGKey
    episode_length: jax.Array
    episode_return: jax.Array
    needs_reset: jax.Array
    resets: Any = None


class VecEnv:
    """An environment as users step it: pure ``reset`` and ``step`` with rollax's contracts.

    * Every step is a real transition with ``terminated`` kept apart from ``truncated`` and
      the true ``final_obs`` (docs/design.md §1).
    * Every reset draws a fresh initial state with a key used nowhere else, independently for
      every environment of a batch (docs/design.md §2).
    * ``params`` is data: changing it does not recompile, and any field may carry one value
      per environment (docs/design.md §3).

    ``reset`` and ``step`` are not jitted themselves, so they compose into the caller's
    ``jit``/``scan``/``vmap``. Inputs are checked when they enter (shape and dtype at trace
    time, values when concrete), so nothing costly is added to the compiled step.

    Args:
        env: The environment definition.
        num_envs: ``None`` for a single environment (no batch axis) or a positive number of
            independent environments (leading batch axis on every array).
        autoreset_mode: One of :data:`AUTORESET_MODES`.
        reset_strategy: One of :data:`rollax.envs.RESET_STRATEGIES`, or ``None`` for the
            default of :func:`rollax.envs.default_reset_strategy` (on the CPU ``"pool"`` from
            16 environments, ``"on_done"`` below and for one environment; on accelerators
            ``"every_step"``, or ``"pool"`` for an environment with a costly reset).
        env_id: The registered id, for messages.
        block_size: ``"compact"`` only: environments reset per block.
        refill_size: ``"pool"`` only: fresh states drawn per refill (at least ``num_envs``).

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
        reset_strategy: str | None = None,
        env_id: str | None = None,
        *,
        block_size: int | None = None,
        refill_size: int | None = None,
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
        self.env = env
        self.num_envs = None if num_envs is None else int(num_envs)
        self.autoreset_mode = autoreset_mode
        self.strategy: ResetStrategy = make_reset_strategy(
            reset_strategy or default_reset_strategy(self.num_envs, env.costly_reset),
            num_envs=self.num_envs or 1,
            episode_length=int(env.default_params.max_episode_steps),
            block_size=block_size,
            refill_size=refill_size,
        )
        self.env_id = env_id or env.name

    @property
    def reset_strategy(self) -> str:
        """Name of the reset strategy; see :data:`rollax.envs.RESET_STRATEGIES`."""
        return self.strategy.name

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

    def reset(
        self,
        key: PRNGKey,
        params: EnvParams | None = None,
        *,
        part: int | jax.Array = 0,
        num_parts: int = 1,
    ) -> tuple[EnvState, TimeStep]:
        """Start an episode in every environment.

        Args:
            key: A JAX key; split into one independent key per environment.
            params: Environment parameters; ``None`` for the defaults.
            part: With ``num_parts``: this batch is part ``part`` (an int, or an int32
                scalar that may be traced) of ``num_parts`` equal batches that together form
                one logical batch of ``num_parts * num_envs`` environments, all reset from
                ``key``. Environment ``j`` of the part takes the key of environment
                ``part * num_envs + j`` of the whole, so a batch split into seeds or shards
                starts exactly as the whole would, and no part's keys depend on how many
                parts there are. The reset strategy's own key (the pool's chain) is child
                ``part`` of the whole's.
            num_parts: The number of parts (1: this batch is the whole).

        Returns:
            ``(state, timestep)``: the timestep has the first observations, zero rewards and
            false flags.
        """
        params, axes = self.check_params(params)
        n = self.num_envs or 1
        # The strategy's own randomness (the pool's key chain) comes from its own child.
        key, strategy_key = jax.random.split(key)
        # Threefry splits are partitionable: child i does not depend on how many there are.
        keys = jax.random.split(key, num_parts * n)
        if num_parts > 1:
            keys = jax.lax.dynamic_slice_in_dim(keys, part * n, n)
        strategy_key = jax.random.split(strategy_key, num_parts)[part]
        starts = Starts(self.env, params, axes)
        next_keys, core, obs = starts.draw(keys)
        zeros = jnp.zeros(n, jnp.int32)
        state = EnvState(
            core=core,
            key=next_keys,
            episode_length=zeros,
            episode_return=zeros.astype(jnp.float32),
            needs_reset=zeros.astype(jnp.bool_),
        )
        state = state.replace(resets=self.strategy.init(starts, strategy_key, core, n))
        return self._unbatch(state), self._unbatch_timestep(_start_timestep(obs, n))

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
        params, axes = self.check_params(params)
        state = self._batch(state)
        action = action if self.num_envs else action[None]
        starts = Starts(self.env, params, axes)
        stepped, ts = jax.vmap(self._transition, in_axes=(0, 0, axes))(
            state.replace(resets=None), action, params
        )
        stepped = stepped.replace(resets=state.resets)
        if self.autoreset_mode == "same_step":
            stepped, obs = self._reset_masked(starts, stepped, ts.done, ts.obs)
            ts = ts.replace(obs=obs)
        elif self.autoreset_mode == "next_step":
            # Environments whose previous step ended an episode reset now and ignore their
            # action; the others take a real step and remember whether it ended theirs.
            resetting = state.needs_reset
            stepped = stepped.replace(needs_reset=ts.done)
            stepped, obs = self._reset_masked(starts, stepped, resetting, ts.obs)
            ts = select(resetting, _start_timestep(obs, resetting.shape[0]), ts)
        return self._unbatch(stepped), self._unbatch_timestep(ts)

    def reset_where(
        self, state: EnvState, mask: jax.Array, params: EnvParams | None = None
    ) -> tuple[EnvState, TimeStep]:
        """Reset only the environments where ``mask`` is true, each with fresh randomness.

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
        params, axes = self.check_params(params)
        state = self._batch(state)
        mask = mask if self.num_envs else mask[None]
        obs = jax.vmap(self.env.observe, in_axes=(0, axes))(state.core, params)
        state, obs = self._reset_masked(Starts(self.env, params, axes), state, mask, obs)
        return self._unbatch(state), self._unbatch_timestep(_start_timestep(obs, mask.shape[0]))

    @property
    def can_render(self) -> bool:
        """Whether the environment draws pictures of its states (has a ``render`` method)."""
        return callable(getattr(self.env, "render", None))

    def render(self, state: EnvState, params: EnvParams | None = None) -> jax.Array:
        """Pictures of the current states: uint8 ``(*batch_shape, H, W, 3)``.

        Pure JAX, so it runs inside ``jit`` and ``vmap`` (e.g. over the states of an episode).

        Raises:
            TypeError: the environment has no ``render`` method.
        """
        if not self.can_render:
            raise TypeError(
                f"{self.env.name} cannot render: it defines no render(state, params) method. "
                f"The classic-control environments and Maze-v0 do."
            )
        params, axes = self.check_params(params)
        core = self._batch(state).core
        frames = jax.vmap(self.env.render, in_axes=(0, axes))(core, params)
        return frames if self.num_envs is not None else frames[0]

    # ------------------------------------------------------------------ batch internals

    def _transition(
        self, state: EnvState, action: jax.Array, params: EnvParams
    ) -> tuple[EnvState, TimeStep]:
        """One environment's real transition with time limit and statistics, no reset."""
        core, reward, terminated = self.env.step_env(state.core, action, params)
        reward = jnp.asarray(reward, jnp.float32)
        length = state.episode_length + 1
        episode_return = state.episode_return + reward
        truncated = length >= params.max_episode_steps
        obs = self.env.observe(core, params)
        next_state = state.replace(core=core, episode_length=length, episode_return=episode_return)
        timestep = TimeStep(
            obs=obs,
            reward=reward,
            terminated=jnp.asarray(terminated, jnp.bool_),
            truncated=truncated,
            final_obs=obs,
            info={"episode_return": episode_return, "episode_length": length},
        )
        return next_state, timestep

    def _reset_masked(
        self, starts: Starts, state: EnvState, mask: jax.Array, obs: Any
    ) -> tuple[EnvState, Any]:
        """Fresh episodes where ``mask`` (by the reset strategy); ``obs`` updated there."""
        core, key, obs, resets = self.strategy.apply(starts, state, mask, obs)
        state = EnvState(
            core=core,
            key=key,
            episode_length=jnp.where(mask, 0, state.episode_length),
            episode_return=jnp.where(mask, 0.0, state.episode_return),
            needs_reset=state.needs_reset & ~mask,
            resets=resets,
        )
        return state, obs

    def _batch(self, state: EnvState) -> EnvState:
        """A single environment's state as a batch of one (per-environment fields only)."""
        if self.num_envs is not None:
            return state
        return self._map_per_env(lambda x: x[None], state)

    def _unbatch(self, state: EnvState) -> EnvState:
        if self.num_envs is not None:
            return state
        return self._map_per_env(lambda x: x[0], state)

    def _unbatch_timestep(self, timestep: TimeStep) -> TimeStep:
        if self.num_envs is not None:
            return timestep
        return jax.tree.map(lambda x: x[0], timestep)

    def _map_per_env(self, fn: Any, state: EnvState) -> EnvState:
        resets = state.resets
        if self.strategy.per_env_state:
            resets = jax.tree.map(fn, resets)
        per_env = state.replace(resets=None)
        return jax.tree.map(fn, per_env).replace(resets=resets)

    # ------------------------------------------------------------------ input checks

    def check_params(self, params: EnvParams | None) -> tuple[EnvParams, Any]:
        """Check environment params as ``reset``/``step`` take them (adapters check on input).

        Returns:
            ``(params, axes)``: the defaults for ``None``; the ``vmap`` axis of every leaf,
            ``None`` for one value for all environments (the defaults' shape), 0 for one per
            environment (a leading ``(num_envs,)`` axis).

        Raises:
            TypeError: params of another class than the environment's.
            ValueError: a leaf of any other shape, naming it.
        """
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
            shape, ref_shape = np.shape(leaf), np.shape(ref)
            if shape == ref_shape:
                return None
            if shape == (self.num_envs, *ref_shape):
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


def _start_timestep(obs: Any, num_envs: int) -> TimeStep:
    """The timestep of a reset for a batch: first observations, zero rewards, false flags."""
    false = jnp.zeros(num_envs, jnp.bool_)
    return TimeStep(
        obs=obs,
        reward=jnp.zeros(num_envs, jnp.float32),
        terminated=false,
        truncated=false,
        final_obs=obs,
        info={
            "episode_return": jnp.zeros(num_envs, jnp.float32),
            "episode_length": jnp.zeros(num_envs, jnp.int32),
        },
    )
