"""A rollax batch as a Stable-Baselines3 ``VecEnv`` (extra ``rollax[sb3]``).

SB3's ``VecEnv`` contract is same-step autoreset: where an episode ends, ``obs`` is already
the next episode's first observation and ``infos[i]["terminal_observation"]`` holds the true
final one, with ``infos[i]["TimeLimit.truncated"]`` telling a time limit from a terminal state.
That is rollax's own semantics (docs/design.md §1), so :class:`RollaxVecEnv` steps the whole batch
in one compiled call and hands SB3 exactly what its ``DummyVecEnv`` over the same
environments would (tested step for step on Gymnasium's CartPole), plus Monitor's
``infos[i]["episode"]`` statistics.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
from gymnasium import Wrapper
from stable_baselines3.common.vec_env import VecEnv as SB3VecEnv
from stable_baselines3.common.vec_env.base_vec_env import VecEnvIndices, VecEnvObs

from rollax import spaces as rspaces
from rollax.adapters._host import (
    Layout,
    cast_action,
    host_vec_env,
    jax_device,
    on_device,
    seed_to_key,
)
from rollax.adapters.gymnasium import to_gymnasium_space
from rollax.envs import Environment, VecEnv

__all__ = ["RollaxVecEnv"]

_ENV_METHODS = ("render", "reset")


class RollaxVecEnv(SB3VecEnv):
    """A batch of rollax environments behind Stable-Baselines3's ``VecEnv`` API.

    ``step`` (``step_async`` then ``step_wait``) returns, for ``N = num_envs``:

    - ``obs``: float32 ``(N, *obs_shape)`` (uint8 images stay uint8), or a dict of such
      arrays for a dict observation space; where an episode ended, the new episode's first
      observation (a fresh reset, drawn with a key never used before);
    - ``rewards``: float32 ``(N,)``; ``dones``: bool ``(N,)``, ``terminated | truncated``;
    - ``infos``: one dict per environment, each with ``"TimeLimit.truncated"`` (bool: the
      time limit cut the episode and it did not terminate, as SB3's ``DummyVecEnv`` sets
      it); an environment whose episode ended also gets ``"terminal_observation"`` (the
      true final observation, shape ``obs_shape``) and ``"episode"``, Monitor's statistics
      ``{"r": return, "l": length, "t": seconds since construction}``, which SB3's
      ``ep_info_buffer`` (``rollout/ep_rew_mean``) reads.

    Arrays handed out are the caller's to keep and write (SB3 turns observations into
    tensors and adds bootstrapped values into ``rewards`` in place).

    The environment parameters are data (docs/design.md §3): assigning :attr:`params`,
    ``set_attr("params", ...)`` or ``set_attr(field, ...)`` (e.g. ``"gravity"``, for some
    environments through ``indices``) changes them for the next step without recompiling.

    Args:
        env: A registered id (``"CartPole-v1"``), a ``rollax.Environment`` or a ``VecEnv``
            (its environment is used).
        num_envs: Environments in the batch.
        render_mode: ``None`` or ``"rgb_array"`` (``render()`` tiles one uint8
            ``(H, W, 3)`` frame per environment; ``get_images()`` returns them).
        reset_strategy: How the fresh resets are computed (see ``rollax.make``). Default on
            the CPU: ``on_done`` below 1,024 environments, ``pool`` from there (as the
            Gymnasium adapter); on an accelerator, its default.
        device: Where the environments compute: ``"cpu"`` (the default: numpy crosses to
            JAX and back without a copy there), another platform name, a ``jax.Device``, or
            ``None`` for JAX's default device.
        **make_options: Environment options, as for ``rollax.make`` (with an id only).

    Raises:
        ValueError: unknown id, bad ``num_envs``, ``render_mode`` or ``device``; all before
            anything compiles.

    Examples:
        >>> from stable_baselines3 import PPO
        >>> from rollax.adapters.sb3 import RollaxVecEnv
        >>> env = RollaxVecEnv("CartPole-v1", 8)
        >>> model = PPO("MlpPolicy", env, n_steps=32).learn(256)  # doctest: +SKIP
    """

    def __init__(
        self,
        env: str | Environment | VecEnv,
        num_envs: int,
        *,
        render_mode: str | None = None,
        reset_strategy: str | None = None,
        device: str | jax.Device | None = "cpu",
        **make_options: Any,
    ) -> None:
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}.")
        self._device = jax_device(device)
        self._vec = host_vec_env(
            env, num_envs, "same_step", reset_strategy, self._device, make_options
        )
        self.render_mode = render_mode
        n = self._vec.num_envs
        action_space = self._vec.action_space
        self._action_dtype = np.dtype(action_space.dtype)
        self._action_shape = (n, *action_space.shape)
        self._action_n = int(action_space.n) if isinstance(action_space, rspaces.Discrete) else 0
        if self._action_n:
            self._unsigned = np.dtype(f"u{self._action_dtype.itemsize}")
        # The state and the step's results cross as one flat array per dtype (Layout): a
        # call pays for every array in and out, more than CartPole's step at 8 environments.
        default = self._vec.default_params
        shapes = jax.eval_shape(
            self._step_outputs,
            jax.eval_shape(self._vec.reset, jax.random.key(0), default)[0],
            jax.ShapeDtypeStruct(self._action_shape, self._action_dtype),
            default,
        )
        self._layout = Layout(shapes)
        self._output_groups = self._layout.groups_of(1)
        self._params: Any = None
        self._params_layout: Layout | None = None
        self._params_packed: tuple = ()
        self.params = default
        self._carry: tuple | None = None
        self._pending = False
        self._key: jax.Array | None = None
        self._reset = jax.jit(self._reset_packed, static_argnums=0)
        self._reset_where = jax.jit(self._reset_where_packed, static_argnums=0)
        self._step = jax.jit(self._step_packed, static_argnums=0)
        self._render: Any = None
        self._t_start = time.time()
        self._envs = range(n)
        super().__init__(
            n, to_gymnasium_space(self._vec.observation_space), to_gymnasium_space(action_space)
        )
        self.metadata["render_fps"] = 30

    # ------------------------------------------------------------------ compiled pieces

    def _step_outputs(self, state: Any, actions: jax.Array, params: Any) -> tuple:
        """The rollax step and what ``step_wait`` reads: ``(state, outputs)``."""
        state, ts = self._vec.step(state, actions, params)
        return state, _outputs(ts)

    def _step_packed(self, params_layout: Layout, carry: tuple, actions: Any, params: tuple):
        state = self._layout.unpack(carry, 0)
        return self._layout.pack(
            self._step_outputs(state, actions, params_layout.unpack(params, 0))
        )

    def _reset_packed(self, params_layout: Layout, key: jax.Array, params: tuple) -> tuple:
        state, ts = self._vec.reset(key, params_layout.unpack(params, 0))
        return self._layout.pack((state, _outputs(ts)))

    def _reset_where_packed(
        self, params_layout: Layout, carry: tuple, mask: jax.Array, params: tuple
    ) -> tuple:
        state = self._layout.unpack(carry, 0)
        state, ts = self._vec.reset_where(state, mask, params_layout.unpack(params, 0))
        return self._layout.pack((state, _outputs(ts)))

    def _outputs_on_host(self) -> tuple:
        """The last call's outputs as numpy views (read-only, zero-copy on the CPU)."""
        carry = self._carry
        views = [
            np.asarray(carry[g]) if g in self._output_groups else None for g in range(len(carry))
        ]
        return self._layout.unpack(views, 1)

    # ------------------------------------------------------------------ properties

    @property
    def device(self) -> jax.Device:
        """The JAX device the environments compute on."""
        return self._device

    @property
    def env(self) -> Environment:
        """The rollax environment definition."""
        return self._vec.env

    @property
    def params(self) -> Any:
        """The ``EnvParams`` in use, as numpy.

        Each field holds one value for all environments (the defaults' shape) or one per
        environment (a leading ``(num_envs,)`` axis). Assign new ones (``env.params =
        env.params.replace(gravity=12.0)``): the next step uses them without recompiling.
        Only a field that turns from one value for all into one per environment (or back)
        compiles the step once more, as its shape changes.
        """
        return self._params

    @params.setter
    def params(self, value: Any) -> None:
        self._vec.check_params(value)  # the class, and each field's shape
        default = self._vec.default_params

        def checked(leaf: Any, ref: Any) -> np.ndarray:
            # A copy in the defaults' dtype: later changes to `value` do not leak in.
            return np.asarray(leaf).astype(np.asarray(ref).dtype)

        host = jax.tree.map(checked, value, default)
        layout = Layout((host,))
        self._params_packed = on_device(layout.pack((host,)), self._device)
        self._params_layout = layout
        self._params = host

    @property
    def state(self) -> Any:
        """The batch's ``rollax.EnvState`` (``None`` before the first reset); assignable."""
        return None if self._carry is None else self._layout.unpack(self._carry, 0)

    @state.setter
    def state(self, value: Any) -> None:
        if self._carry is None:
            raise ValueError("state can be assigned after reset() only.")
        outputs = self._layout.unpack(self._carry, 1)
        self._carry = on_device(self._layout.pack((value, outputs)), self._device)

    # ------------------------------------------------------------------ the VecEnv API

    def reset(self) -> VecEnvObs:
        """Reset every environment with fresh randomness; returns the first observations.

        After ``seed(s)`` the key chain restarts from ``s`` (the same seed gives the same
        episodes); otherwise the chain continues (it starts from fresh entropy).
        ``reset_infos`` holds one empty dict per environment.

        Returns:
            ``obs``, as ``step`` returns it.
        """
        if self._key is None or any(s is not None for s in self._seeds):
            self._key = seed_to_key(self._seeds)
        self._key, key = jax.random.split(self._key)
        self._carry = self._reset(
            self._params_layout, on_device(key, self._device), self._params_packed
        )
        self._pending = False
        self._reset_seeds()
        self._reset_options()
        self.reset_infos = [{} for _ in range(self.num_envs)]
        return _copy(self._outputs_on_host()[0])

    def step_async(self, actions: np.ndarray) -> None:
        """Check the actions and start the compiled step (JAX runs it asynchronously).

        Args:
            actions: One per environment, ``(num_envs, *action_shape)``: integers for a
                discrete space (any integer dtype), floats for a box.

        Raises:
            ValueError: before ``reset()``, or a wrong shape or value (out of a discrete
                range, not finite); nothing is compiled for it.
            TypeError: a dtype the action space does not take.
        """
        if self._carry is None:
            raise ValueError("step_async() before reset(): call reset() first.")
        actions = cast_action(actions, self._action_dtype)
        if actions.shape != self._action_shape:
            raise ValueError(
                f"actions must have shape {self._action_shape} (num_envs {self.num_envs} + "
                f"action shape {self._action_shape[1:]}), got shape {actions.shape}."
            )
        if actions.dtype != self._action_dtype:
            raise TypeError(
                f"actions must have a dtype that casts to {self._action_dtype} "
                f"({self.action_space}), got {actions.dtype}."
            )
        if self._action_n:
            # One reduction: negative integers wrap to large unsigned ones.
            if actions.view(self._unsigned).max() >= self._action_n:
                bad = actions[(actions < 0) | (actions >= self._action_n)]
                raise ValueError(
                    f"actions must lie in [0, {self._action_n}) ({self.action_space}), got "
                    f"{bad[:8].tolist()}."
                )
        elif not np.isfinite(actions).all():
            raise ValueError(f"actions must be finite ({self.action_space}), got {actions}.")
        # numpy goes to jit as it is (its fast path): it follows the carry and params, which
        # are committed to this adapter's device.
        self._carry = self._step(self._params_layout, self._carry, actions, self._params_packed)
        self._pending = True

    def step_wait(self) -> tuple[VecEnvObs, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        """The results of the step ``step_async`` started: ``(obs, rewards, dones, infos)``.

        See the class docstring for their shapes and the keys of ``infos``.

        Raises:
            ValueError: without a ``step_async`` before.
        """
        if not self._pending:
            raise ValueError("step_wait() without step_async(): call step_async(actions) first.")
        self._pending = False
        obs, reward, terminated, truncated, final_obs, returns, lengths = self._outputs_on_host()
        # Copies, not JAX's read-only buffers: SB3 writes into rewards (bootstrapping at a
        # time limit) and hands observations to torch.as_tensor (which warns on read-only).
        obs = _copy(obs)
        rewards = np.array(reward)
        dones = terminated | truncated
        infos: list[dict[str, Any]] = [{"TimeLimit.truncated": False} for _ in self._envs]
        if dones.any():
            final = _copy(final_obs)
            seconds = round(time.time() - self._t_start, 6)
            for i in np.flatnonzero(dones).tolist():
                info = infos[i]
                info["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
                info["terminal_observation"] = _row(final, i)
                info["episode"] = {
                    "r": round(float(returns[i]), 6),
                    "l": int(lengths[i]),
                    "t": seconds,
                }
        return obs, rewards, dones, infos

    def close(self) -> None:
        """Drop the batch's state (nothing else holds resources); ``reset()`` starts anew."""
        self._carry = None
        self._pending = False

    def set_options(self, options: list[dict] | dict | None = None) -> None:
        """Reset options: rollax environments take none (their reset is in ``params``).

        Raises:
            ValueError: for any non-empty options.
        """
        given = options if isinstance(options, list) else [options]
        if any(given):
            raise ValueError(
                f"rollax environments take no reset options, got {options!r}; change the "
                f"reset distribution through params (set_attr or the params property)."
            )

    def get_images(self) -> Sequence[np.ndarray | None]:
        """One uint8 ``(H, W, 3)`` frame per environment when ``render_mode="rgb_array"``."""
        if self.render_mode != "rgb_array":
            warnings.warn(  # as SB3's DummyVecEnv
                f"The render mode is {self.render_mode}, but this method assumes it is "
                f"`rgb_array` to obtain images.",
                stacklevel=2,
            )
            return [None] * self.num_envs
        return list(self._frames())

    def _frames(self) -> np.ndarray:
        """uint8 ``(num_envs, H, W, 3)``: every environment's current frame."""
        if self._carry is None:
            raise ValueError("render() before reset(): call reset() first.")
        if not self._vec.can_render:
            raise ValueError(f"{self._vec.env_id} does not render.")
        if self._render is None:

            def render(params_layout: Layout, carry: tuple, params: tuple) -> jax.Array:
                state = self._layout.unpack(carry, 0)
                return self._vec.render(state, params_layout.unpack(params, 0))

            self._render = jax.jit(render, static_argnums=0)
        return np.asarray(self._render(self._params_layout, self._carry, self._params_packed))

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """One value of ``attr_name`` per environment in ``indices`` (all by default).

        ``"params"`` gives each environment's ``EnvParams``, a field of them (e.g.
        ``"max_episode_steps"``) its value; other names are attributes of this adapter (the
        same for every environment: ``render_mode``, ``metadata``, ``observation_space``,
        ...) or else of the rollax environment definition.

        Raises:
            AttributeError: a name none of these has (as SB3's ``has_attr`` expects).
        """
        rows = self._rows(indices)
        if attr_name == "params" or attr_name in self._fields():
            values = [self._env_params(i) for i in rows]
            return values if attr_name == "params" else [getattr(v, attr_name) for v in values]
        for owner in (self, self._vec.env):
            if hasattr(owner, attr_name):
                return [getattr(owner, attr_name)] * len(rows)
        raise AttributeError(
            f"get_attr({attr_name!r}): not 'params', a field of "
            f"{type(self._params).__name__} {self._fields()}, nor an attribute of "
            f"RollaxVecEnv or of the environment {self._vec.env_id}."
        )

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Change the environment parameters of the environments in ``indices`` (all by default).

        ``attr_name`` is ``"params"`` (``value`` an ``EnvParams``) or one of its fields
        (``value`` that field's value): one value for all of ``indices``, or, without
        ``indices``, also one per environment. The next step uses them without recompiling,
        except when a field first gets different values for different environments (its
        shape changes; see :attr:`params`).

        Raises:
            AttributeError: any other name (what the compiled step reads is the params).
        """
        fields = self._fields()
        if attr_name != "params" and attr_name not in fields:
            raise AttributeError(
                f"set_attr({attr_name!r}): only 'params' and its fields {fields} can be set on "
                f"a RollaxVecEnv (they are what the compiled step reads)."
            )
        current = self._params
        if indices is None:
            self.params = value if attr_name == "params" else current.replace(**{attr_name: value})
            return
        rows = self._rows(indices)
        if attr_name != "params":
            value = self._env_params(0).replace(**{attr_name: value})
        default = self._vec.default_params
        if type(value) is not type(default):
            raise TypeError(
                f"set_attr('params', value, indices): value must be a {type(default).__name__}"
                f" (one environment's), got {type(value).__name__}."
            )
        n = self.num_envs

        def written(old: np.ndarray, new: Any, ref: Any) -> np.ndarray:
            new = np.asarray(new, old.dtype)
            if new.shape != np.shape(ref):
                raise ValueError(
                    f"set_attr with indices takes one environment's values: shape "
                    f"{np.shape(ref)}, got {new.shape}."
                )
            if old.ndim == new.ndim and np.array_equal(old, new):
                return old  # unchanged and shared: stays one value for all
            widened = np.array(np.broadcast_to(old, (n, *new.shape)))
            widened[rows] = new
            return widened

        self.params = jax.tree.map(written, current, value, default)

    def env_method(
        self,
        method_name: str,
        *method_args: Any,
        indices: VecEnvIndices = None,
        **method_kwargs: Any,
    ) -> list[Any]:
        """Call a per-environment method on the environments in ``indices``.

        ``"render"`` gives each one's frame, uint8 ``(H, W, 3)``; ``"reset"`` resets only
        them (fresh randomness; the others go on) and gives each ``(obs, {})``, as a
        Gymnasium environment's ``reset()`` would. Neither takes arguments.

        Raises:
            AttributeError: another method name.
            TypeError: arguments given.
        """
        if method_name not in _ENV_METHODS:
            raise AttributeError(
                f"env_method({method_name!r}): a RollaxVecEnv's environments have the methods "
                f"{list(_ENV_METHODS)}."
            )
        if method_args or method_kwargs:
            raise TypeError(f"env_method({method_name!r}) takes no arguments.")
        rows = list(self._rows(indices))
        if method_name == "render":
            frames = self._frames()
            return [frames[i] for i in rows]
        if self._carry is None:
            raise ValueError("env_method('reset') before reset(): call reset() first.")
        mask = np.zeros(self.num_envs, np.bool_)
        mask[rows] = True
        self._carry = self._reset_where(
            self._params_layout, self._carry, on_device(mask, self._device), self._params_packed
        )
        self._pending = False
        obs = _copy(self._outputs_on_host()[0])
        return [(_row(obs, i), {}) for i in rows]

    def env_is_wrapped(
        self, wrapper_class: type[Wrapper], indices: VecEnvIndices = None
    ) -> list[bool]:
        """``False`` for each environment: none is wrapped by a Gymnasium wrapper.

        (So SB3's ``VecMonitor`` records on top without warning that a ``Monitor`` is there;
        the ``"episode"`` entries the adapter writes itself are the same statistics.)
        """
        return [False] * len(self._rows(indices))

    def _env_params(self, i: int) -> Any:
        """Environment ``i``'s own params (every field in the defaults' shape)."""
        return jax.tree.map(
            lambda x, ref: x if x.ndim == np.ndim(ref) else x[i],
            self._params,
            self._vec.default_params,
        )

    def _fields(self) -> list[str]:
        return list(type(self._vec.default_params).__dataclass_fields__)

    def _rows(self, indices: VecEnvIndices) -> list[int]:
        """``indices`` as a list of environment numbers, each checked."""
        rows = list(self._get_indices(indices))
        bad = [i for i in rows if not (isinstance(i, (int, np.integer)) and 0 <= i < self.num_envs)]
        if bad:
            raise ValueError(
                f"indices must be None, an int or ints in [0, {self.num_envs}), got {indices!r}."
            )
        return [int(i) for i in rows]


def _outputs(ts: Any) -> tuple:
    """What ``step_wait`` reads from a rollax ``TimeStep``, in its order."""
    info = ts.info
    return (
        ts.obs,
        ts.reward,
        ts.terminated,
        ts.truncated,
        ts.final_obs,
        info["episode_return"],
        info["episode_length"],
    )


def _copy(obs: np.ndarray | dict[str, np.ndarray]) -> np.ndarray | dict[str, np.ndarray]:
    """A writable copy of an observation batch (an array, or a flat dict of them)."""
    if isinstance(obs, np.ndarray):
        return np.array(obs)
    return {key: np.array(value) for key, value in obs.items()}


def _row(obs: np.ndarray | dict[str, np.ndarray], i: int) -> np.ndarray | dict[str, np.ndarray]:
    """Environment ``i``'s observation (a view) in an observation batch."""
    if isinstance(obs, np.ndarray):
        return obs[i]
    return {key: value[i] for key, value in obs.items()}
