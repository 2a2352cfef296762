"""rollax environments as Gymnasium environments (extra ``rollax[gymnasium]``).

- :class:`RollaxVectorEnv` (or :func:`make_vec`): a ``gymnasium.vector.VectorEnv`` that runs a
  whole batch in one compiled step, in any of Gymnasium's three autoreset modes, with numpy in
  and out, behaving as Gymnasium's ``SyncVectorEnv`` does in that mode
  (``metadata["autoreset_mode"]`` says which).
- :class:`RollaxEnv`: a single ``gymnasium.Env`` (passes ``gymnasium.utils.env_checker``).
- :func:`register_envs`: every rollax environment as ``rollax/<id>`` in Gymnasium's registry,
  so ``gymnasium.make("rollax/CartPole-v1")`` and ``gymnasium.make_vec("rollax/CartPole-v1",
  num_envs=N, vectorization_mode="vector_entry_point")`` work. Importing this module registers.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import jax
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from rollax import spaces as rspaces
from rollax.adapters._host import (
    as_numpy,
    cast_action,
    environment,
    host_vec_env,
    jax_device,
    on_device,
    seed_to_key,
)
from rollax.envs import Environment, VecEnv, make, registered_envs

__all__ = ["RollaxEnv", "RollaxVectorEnv", "make_vec", "register_envs", "to_gymnasium_space"]

_MODES = {
    AutoresetMode.NEXT_STEP: "next_step",
    AutoresetMode.SAME_STEP: "same_step",
    AutoresetMode.DISABLED: "disabled",
}


def to_gymnasium_space(space: rspaces.Space) -> gymnasium.spaces.Space:
    """The Gymnasium space of a rollax space."""
    if isinstance(space, rspaces.Discrete):
        return gymnasium.spaces.Discrete(int(space.n))
    if isinstance(space, rspaces.Box):
        low = np.broadcast_to(np.asarray(space.low, space.dtype), space.shape)
        high = np.broadcast_to(np.asarray(space.high, space.dtype), space.shape)
        return gymnasium.spaces.Box(low, high, space.shape, np.dtype(space.dtype))
    if isinstance(space, rspaces.Dict):
        return gymnasium.spaces.Dict({k: to_gymnasium_space(v) for k, v in space.spaces.items()})
    raise TypeError(f"No Gymnasium equivalent for {type(space).__name__}.")


def _autoreset_mode(mode: AutoresetMode | str) -> AutoresetMode:
    if isinstance(mode, AutoresetMode):
        return mode
    for m, name in _MODES.items():
        if mode in (name, m.value, m.name):
            return m
    valid = ", ".join(f"AutoresetMode.{m.name}" for m in _MODES)
    raise ValueError(f"autoreset_mode must be one of {valid} (or their names), got {mode!r}.")


class RollaxVectorEnv(VectorEnv):
    """A batch of rollax environments behind Gymnasium's vector API.

    Args:
        env: A registered id (``"CartPole-v1"``), a ``rollax.Environment`` or a ``VecEnv``
            (its environment is used).
        num_envs: Environments in the batch.
        autoreset_mode: ``AutoresetMode.NEXT_STEP`` (Gymnasium's default), ``SAME_STEP``
            (``info["final_obs"]``, ``info["final_info"]`` with their masks; ``obs`` is already
            the next episode's) or ``DISABLED`` (reset ended environments with
            ``reset(options={"reset_mask": mask})``); the names work too.
        render_mode: ``None`` or ``"rgb_array"`` (``render()`` returns a tuple of frames).
        reset_strategy: How resets are computed (see ``rollax.make``); every one is fresh.
            Default on the CPU: ``on_done`` below 1,024 environments, ``pool`` from there
            (every step is its own call here, which pays for each operation of the program);
            on an accelerator, that accelerator's default
            (:func:`rollax.envs.default_reset_strategy`).
        device: Where the environments compute: ``"cpu"`` (the default), another platform
            name (``"gpu"``), a ``jax.Device``, or ``None`` for JAX's default device. Every
            step hands numpy arrays in and out, which is zero-copy on the CPU; on an
            accelerator each step makes a round trip to the host (the Adapters page has a GPU's
            figures), so a numpy agent is best served on the CPU.
        **make_options: Environment options, as for ``rollax.make``.
    """

    def __init__(
        self,
        env: str | Environment | VecEnv,
        num_envs: int,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        render_mode: str | None = None,
        reset_strategy: str | None = None,
        device: str | jax.Device | None = "cpu",
        **make_options: Any,
    ) -> None:
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}.")
        mode = _autoreset_mode(autoreset_mode)
        self._device = jax_device(device)
        self._vec = host_vec_env(
            env, num_envs, _MODES[mode], reset_strategy, self._device, make_options
        )
        self.num_envs = num_envs
        self.render_mode = render_mode
        self.metadata = {
            "autoreset_mode": mode,
            "render_modes": ["rgb_array"] if self._vec.can_render else [],
        }
        self.single_observation_space = to_gymnasium_space(self._vec.observation_space)
        self.single_action_space = to_gymnasium_space(self._vec.action_space)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._action_dtype = np.dtype(self._vec.action_space.dtype)
        self._params = on_device(self._vec.default_params, self._device)
        self._reset = jax.jit(self._vec.reset)
        self._reset_where = jax.jit(self._vec.reset_where)
        self._step = jax.jit(self._step_outputs)
        self._render: Any = None
        self._state: Any = None
        self._key: jax.Array | None = None
        self._ended = np.zeros(num_envs, np.bool_)

    def _step_outputs(self, state: Any, actions: jax.Array, params: Any) -> tuple:
        """The step with only what this mode returns (every output costs a copy per call)."""
        state, ts = self._vec.step(state, actions, params)
        outputs = (ts.obs, ts.reward, ts.terminated, ts.truncated)
        if self.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP:
            outputs += (ts.final_obs,)
        return state, outputs

    @property
    def device(self) -> jax.Device:
        """The JAX device the environments compute on."""
        return self._device

    @property
    def params(self) -> Any:
        """The environment parameters in use; assign new ones (same structure) to change them."""
        return self._params

    @property
    def state(self) -> Any:
        """The batch's ``rollax.EnvState`` (``None`` before the first reset); assignable."""
        return self._state

    @state.setter
    def state(self, value: Any) -> None:
        self._state = None if value is None else jax.device_put(value, self._device)

    @params.setter
    def params(self, value: Any) -> None:
        self._params = on_device(value, self._device)

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset every environment, or only ``options["reset_mask"]``'s, with fresh randomness.

        ``seed`` (an int, a list of ints or None) seeds the batch's key chain on a full reset:
        the same seed gives the same episodes; without one, the chain continues (or starts from
        fresh entropy). A masked reset draws from the masked environments' own keys, which
        the last full reset seeded (unlike ``SyncVectorEnv``, a seed given with a mask does
        not re-seed them).
        """
        options = dict(options or {})
        if seed is not None or self._key is None:
            self._key = seed_to_key(seed)
        mask = options.pop("reset_mask", None)
        if mask is not None:
            self._check_mask(mask)
            if self._state is None:
                raise ValueError("reset(options={'reset_mask': ...}) needs a full reset first.")
            placed = on_device(np.asarray(mask), self._device)
            self._state, ts = self._reset_where(self._state, placed, self._params)
            self._ended = self._ended & ~np.asarray(mask)
        else:
            self._key, key = jax.random.split(self._key)
            self._state, ts = self._reset(on_device(key, self._device), self._params)
            self._ended = np.zeros(self.num_envs, np.bool_)
        return as_numpy(ts.obs), {}

    def step(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every environment; see the class docstring for what each mode returns."""
        if self._state is None:
            raise ValueError("step() before reset(): call reset() first.")
        mode = self.metadata["autoreset_mode"]
        if mode is AutoresetMode.DISABLED and self._ended.any():
            raise ValueError(
                f"environments {np.flatnonzero(self._ended).tolist()} ended and autoreset is "
                f"disabled: reset them with reset(options={{'reset_mask': mask}}) first."
            )
        # numpy goes to jit as it is (its fast path): it follows the state and params, which
        # are committed to this adapter's device.
        actions = cast_action(actions, self._action_dtype)
        self._state, outputs = self._step(self._state, actions, self._params)
        obs = as_numpy(outputs[0])
        reward, terminated, truncated = (np.asarray(x) for x in outputs[1:4])
        reward = reward.astype(np.float64)  # as SyncVectorEnv returns rewards
        done = terminated | truncated
        self._ended = done
        infos: dict[str, Any] = {}
        if mode is AutoresetMode.SAME_STEP and done.any():
            final = as_numpy(outputs[4])
            final_obs = np.full(self.num_envs, None, dtype=object)
            ended = np.flatnonzero(done)
            if isinstance(final, np.ndarray):  # one row (a view) per ended environment
                final_obs[ended] = list(final[ended])
            else:
                for i in ended:
                    final_obs[i] = jax.tree.map(lambda x, i=i: x[i], final)
            infos = {
                "final_obs": final_obs,
                "_final_obs": done.copy(),
                "final_info": {},
                "_final_info": done.copy(),
            }
        return obs, reward, terminated, truncated, infos

    def render(self) -> tuple[np.ndarray, ...] | None:
        """One uint8 ``(H, W, 3)`` frame per environment when ``render_mode="rgb_array"``."""
        if self.render_mode is None:
            return None
        if self._state is None:
            raise ValueError("render() before reset(): call reset() first.")
        if self._render is None:
            self._render = jax.jit(self._vec.render)
        return tuple(np.asarray(self._render(self._state, self._params)))

    def _check_mask(self, mask: Any) -> None:
        """Gymnasium's own checks of ``options["reset_mask"]``, as ``ValueError``."""
        if not isinstance(mask, np.ndarray):
            raise ValueError(
                f"`options['reset_mask': mask]` must be a numpy array, got {type(mask)}"
            )
        if mask.shape != (self.num_envs,):
            raise ValueError(
                f"`options['reset_mask': mask]` must have shape `({self.num_envs},)`, got "
                f"{mask.shape}"
            )
        if mask.dtype != np.bool_:
            raise ValueError(
                f"`options['reset_mask': mask]` must have `dtype=np.bool_`, got {mask.dtype}"
            )
        if not mask.any():
            raise ValueError(
                f"`options['reset_mask': mask]` must contain a boolean array, got reset_mask={mask}"
            )


def make_vec(
    env: str | Environment | VecEnv,
    num_envs: int,
    autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
    **kwargs: Any,
) -> RollaxVectorEnv:
    """A :class:`RollaxVectorEnv` (see there for the arguments)."""
    return RollaxVectorEnv(env, num_envs, autoreset_mode, **kwargs)


class RollaxEnv(gymnasium.Env):
    """One rollax environment behind Gymnasium's single-environment API.

    Episodes end with ``terminated`` or ``truncated`` (the time limit); call ``reset()`` then.

    Args:
        env: A registered id, a ``rollax.Environment`` or a ``VecEnv``.
        render_mode: ``None`` or ``"rgb_array"``.
        device: Where the environment computes (as for :class:`RollaxVectorEnv`; default
            ``"cpu"``).
        **make_options: Environment options, as for ``rollax.make``.
    """

    def __init__(
        self,
        env: str | Environment | VecEnv,
        render_mode: str | None = None,
        device: str | jax.Device | None = "cpu",
        **make_options: Any,
    ) -> None:
        self._device = jax_device(device)
        core, env_id = environment(make(env, **make_options) if isinstance(env, str) else env)
        self._vec = VecEnv(core, None, "disabled", "on_done", env_id)
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}.")
        self.render_mode = render_mode
        self.metadata = {
            "render_modes": ["rgb_array"] if self._vec.can_render else [],
            "render_fps": 30,
        }
        self.observation_space = to_gymnasium_space(self._vec.observation_space)
        self.action_space = to_gymnasium_space(self._vec.action_space)
        self._params = on_device(self._vec.default_params, self._device)
        self._reset = jax.jit(self._vec.reset)
        self._step = jax.jit(self._vec.step)
        self._render = jax.jit(self._vec.render) if self._vec.can_render else None
        self._state: Any = None
        self._key: jax.Array | None = None

    @property
    def device(self) -> jax.Device:
        """The JAX device the environment computes on."""
        return self._device

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start an episode; the same ``seed`` gives the same first observation."""
        super().reset(seed=seed)
        if seed is not None or self._key is None:
            self._key = seed_to_key(seed)
        self._key, key = jax.random.split(self._key)
        self._state, ts = self._reset(on_device(key, self._device), self._params)
        return as_numpy(ts.obs), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """One transition; ``(obs, reward, terminated, truncated, info)``."""
        if self._state is None:
            raise ValueError("step() before reset(): call reset() first.")
        action = cast_action(action, np.dtype(self._vec.action_space.dtype))
        self._state, ts = self._step(self._state, action, self._params)
        return (
            as_numpy(ts.obs),
            float(ts.reward),
            bool(ts.terminated),
            bool(ts.truncated),
            {},
        )

    def render(self) -> np.ndarray | None:
        """The current state as uint8 ``(H, W, 3)`` when ``render_mode="rgb_array"``."""
        if self.render_mode is None or self._render is None:
            return None
        if self._state is None:
            raise ValueError("render() before reset(): call reset() first.")
        return np.asarray(self._render(self._state, self._params))


def register_envs() -> list[str]:
    """Register every rollax environment as ``rollax/<id>`` in Gymnasium (idempotent).

    Returns:
        The Gymnasium ids.
    """
    ids = []
    for env_id in registered_envs():
        gym_id = f"rollax/{env_id}"
        if gym_id not in gymnasium.registry:
            # rollax applies the time limit itself (``truncated``): no TimeLimit wrapper.
            gymnasium.register(
                gym_id,
                entry_point=_single_entry,
                vector_entry_point=_vector_entry,
                kwargs={"env": env_id},
                disable_env_checker=True,
                order_enforce=False,
            )
        ids.append(gym_id)
    return ids


def _single_entry(env: str, **kwargs: Any) -> RollaxEnv:
    return RollaxEnv(env, **kwargs)


def _vector_entry(env: str, num_envs: int, **kwargs: Any) -> RollaxVectorEnv:
    return RollaxVectorEnv(env, num_envs, **kwargs)


register_envs()
