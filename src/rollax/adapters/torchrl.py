"""rollax environments as TorchRL environments (extra ``rollax[torchrl]``).

:class:`RollaxEnv` is a ``torchrl.envs.EnvBase`` over a rollax batch: the whole batch steps in
one compiled JAX call, tensors cross between JAX and PyTorch through DLPack, the step's
``("next", "observation")`` is the true next observation (the final one where an episode ends:
rollax runs with autoreset disabled and TorchRL resets), ``done``/``terminated``/``truncated``
are kept apart, and a partial reset through ``"_reset"`` resets only the masked environments,
each with fresh randomness.

A vector observation is the ``"observation"`` entry. Dict observations (docs/design.md §6) become
one entry per key, a ``"/"`` in a key nesting it: ``{"pixels/fixed": uint8 (H, W, 3),
"state": ...}`` is ``("pixels", "fixed")`` (uint8) and ``"state"``.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase
from torchrl.data import Bounded, Categorical, Composite, Unbounded
from torchrl.envs import EnvBase

from rollax import spaces as rspaces
from rollax.envs import Environment, VecEnv, default_reset_strategy, make

__all__ = ["RollaxEnv"]


def _to_torch(x: jax.Array, device: torch.device) -> torch.Tensor:
    """A JAX array as a tensor, zero-copy through DLPack when on the same device."""
    return torch.from_dlpack(x).to(device)


def _to_jax(x: torch.Tensor, device: jax.Device) -> jax.Array:
    """A tensor as a JAX array on ``device``, zero-copy through DLPack when they share it."""
    x = x.detach().contiguous()
    if device.platform == "cpu":
        return jnp.from_dlpack(x.cpu())
    return jax.device_put(jnp.from_dlpack(x), device)


def _jax_device(device: torch.device) -> jax.Device:
    """The JAX device that shares memory with torch's ``device``, else JAX's default."""
    platform = {"cpu": "cpu", "cuda": "gpu"}.get(device.type)
    try:
        devices = jax.devices(platform) if platform else []
    except RuntimeError:  # JAX has no backend for it
        devices = []
    if not devices:
        return jax.devices()[0]
    index = device.index or 0
    return devices[index] if index < len(devices) else devices[0]


def _box_spec(space: rspaces.Box, n: int) -> Bounded | Unbounded:
    """The TorchRL spec of ``n`` stacked values of a Box (uint8 images stay uint8)."""
    shape = (n, *space.shape)
    dtype = torch.uint8 if np.dtype(space.dtype) == np.uint8 else torch.float32
    if np.all(np.isfinite(space.low)) and np.all(np.isfinite(space.high)):
        low = torch.as_tensor(np.broadcast_to(space.low, space.shape).copy()).to(dtype)
        high = torch.as_tensor(np.broadcast_to(space.high, space.shape).copy()).to(dtype)
        return Bounded(low.expand(shape), high.expand(shape), shape, dtype=dtype)
    return Unbounded(shape, dtype=dtype)


def _nest(flat: dict[str, Any]) -> dict[str, Any]:
    """``{"pixels/fixed": x, "state": y}`` -> ``{"pixels": {"fixed": x}, "state": y}``."""
    nested: dict[str, Any] = {}
    for key, value in flat.items():
        *parents, leaf = key.split("/")
        node = nested
        for parent in parents:
            node = node.setdefault(parent, {})
        node[leaf] = value
    return nested


def _composite(entries: dict[str, Any], n: int) -> Composite:
    """A (nested) Composite spec of batch size ``n`` from nested dicts of specs."""
    return Composite(
        {k: _composite(v, n) if isinstance(v, dict) else v for k, v in entries.items()},
        shape=(n,),
    )


class RollaxEnv(EnvBase):
    """A rollax batch behind TorchRL's ``EnvBase``.

    Args:
        env: A registered id (``"CartPole-v1"``), a ``rollax.Environment`` or a ``VecEnv``.
        num_envs: Environments in the batch (the env's ``batch_size``).
        device: Where tensors are returned. JAX computes on the device that shares memory
            with it (the CPU for ``"cpu"``, the same GPU for ``"cuda"``), so tensors pass
            through DLPack without copies; on JAX's default device if it has no such device.
        seed: Seeds the batch's key chain (``set_seed`` does the same later).
        **make_options: Environment options, as for ``rollax.make`` (with an id only).

    Attributes:
        jax_device: The JAX device the environments compute on.
    """

    def __init__(
        self,
        env: str | Environment | VecEnv,
        num_envs: int,
        device: str | torch.device = "cpu",
        seed: int = 0,
        **make_options: Any,
    ) -> None:
        if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}.")
        super().__init__(device=device, batch_size=torch.Size([num_envs]))
        self.jax_device = _jax_device(self.device)
        strategy = make_options.pop("reset_strategy", None)
        if isinstance(env, str):
            if strategy is None:  # the default for the device JAX computes on
                core = make(env, **make_options).env
                strategy = default_reset_strategy(
                    num_envs, core.costly_reset, backend=self.jax_device.platform
                )
            self._vec = make(
                env,
                num_envs=num_envs,
                autoreset_mode="disabled",
                reset_strategy=strategy,
                **make_options,
            )
        else:
            if make_options:
                raise TypeError(f"options {sorted(make_options)} apply only when env is an id.")
            core = env.env if isinstance(env, VecEnv) else env
            env_id = env.env_id if isinstance(env, VecEnv) else None
            if strategy is None:
                strategy = default_reset_strategy(
                    num_envs, core.costly_reset, backend=self.jax_device.platform
                )
            self._vec = VecEnv(core, num_envs, "disabled", strategy, env_id)
        self._params = jax.device_put(
            jax.tree.map(jnp.asarray, self._vec.default_params), self.jax_device
        )
        self._reset_all = jax.jit(self._vec.reset)
        self._reset_where = jax.jit(self._vec.reset_where)
        self._step_jit = jax.jit(self._step_outputs)
        self._state: Any = None
        self._key = jax.random.key(seed)
        self._make_specs(num_envs)

    def _make_specs(self, n: int) -> None:
        obs_space, act_space = self._vec.observation_space, self._vec.action_space
        if isinstance(obs_space, rspaces.Dict):
            entries = _nest({k: _box_spec(s, n) for k, s in obs_space.spaces.items()})
            self.observation_spec = _composite(entries, n)
        else:
            self.observation_spec = Composite(observation=_box_spec(obs_space, n), shape=(n,))
        if isinstance(act_space, rspaces.Discrete):
            self.action_spec = Categorical(int(act_space.n), shape=(n,), dtype=torch.int64)
        else:
            shape = (n, *act_space.shape)
            self.action_spec = Bounded(
                torch.as_tensor(np.array(act_space.low)).expand(shape),
                torch.as_tensor(np.array(act_space.high)).expand(shape),
                shape,
                dtype=torch.float32,
            )
        self.reward_spec = Unbounded((n, 1), dtype=torch.float32)
        flag = Categorical(2, shape=(n, 1), dtype=torch.bool)
        self.done_spec = Composite(
            done=flag.clone(), terminated=flag.clone(), truncated=flag.clone(), shape=(n,)
        )

    def _step_outputs(self, state: Any, action: jax.Array, params: Any) -> tuple:
        state, ts = self._vec.step(state, action, params)
        return state, (ts.obs, ts.reward, ts.terminated, ts.truncated)

    def _observation(self, obs: Any) -> dict[str, Any]:
        """The observation entries of a tensordict: ``"observation"`` or the dict's keys."""
        if isinstance(obs, dict):
            return _nest({k: _to_torch(v, self.device) for k, v in obs.items()})
        return {"observation": _to_torch(obs, self.device)}

    def _flags(self, terminated: jax.Array, truncated: jax.Array) -> dict[str, torch.Tensor]:
        term = _to_torch(terminated, self.device).reshape(-1, 1)
        trunc = _to_torch(truncated, self.device).reshape(-1, 1)
        return {"done": term | trunc, "terminated": term, "truncated": trunc}

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs: Any) -> TensorDictBase:
        n = self.batch_size[0]
        mask = None
        if tensordict is not None and "_reset" in tensordict.keys():
            mask = tensordict.get("_reset").reshape(n)
        if self._state is None or mask is None or bool(mask.all()):
            self._key, key = jax.random.split(self._key)
            self._state, ts = self._reset_all(jax.device_put(key, self.jax_device), self._params)
        else:
            mask = _to_jax(mask.bool(), self.jax_device)
            self._state, ts = self._reset_where(self._state, mask, self._params)
        zeros = jnp.zeros(n, jnp.bool_, device=self.jax_device)
        return TensorDict(
            {**self._observation(ts.obs), **self._flags(zeros, zeros)},
            batch_size=self.batch_size,
            device=self.device,
        )

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        action = tensordict.get("action")
        if isinstance(self._vec.action_space, rspaces.Discrete):
            action = action.to(torch.int32)
        self._state, (obs, reward, terminated, truncated) = self._step_jit(
            self._state, _to_jax(action, self.jax_device), self._params
        )
        return TensorDict(
            {
                **self._observation(obs),
                "reward": _to_torch(reward, self.device).reshape(-1, 1),
                **self._flags(terminated, truncated),
            },
            batch_size=self.batch_size,
            device=self.device,
        )

    def _set_seed(self, seed: int | None) -> None:
        self._key = jax.random.key(0 if seed is None else int(seed))
