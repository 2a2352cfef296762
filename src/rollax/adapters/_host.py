"""What the adapters that hand numpy to host-side code share (Gymnasium, Stable-Baselines3).

Each of them steps a whole rollax batch in one compiled call per step, takes numpy actions
and returns numpy results; these helpers build that batch and cross between numpy and JAX.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rollax.envs import Environment, VecEnv, default_reset_strategy, make

PER_CALL_POOL_FROM = 1024
"""Default reset strategy of these adapters on the CPU: ``pool`` from this many environments,
``on_done`` below. Here every step is its own call, and a call pays for each operation of the
program, so ``pool`` pays off only at larger batches than in a compiled loop (the Adapters
page, Gymnasium, has the figures)."""


def as_numpy(obs: Any) -> Any:
    """An observation (an array or a dict of arrays) as numpy, zero-copy on the CPU.

    The arrays are read-only views of JAX's buffers.
    """
    return jax.tree.map(np.asarray, obs)


def jax_device(device: str | jax.Device | None) -> jax.Device:
    """The JAX device an adapter computes on: a platform name, a device, or None (default)."""
    if device is None:
        return jax.devices()[0]
    if isinstance(device, jax.Device):
        return device
    if isinstance(device, str):
        try:
            return jax.devices(device)[0]
        except RuntimeError as err:
            raise ValueError(
                f"device={device!r} is not available to JAX here ({err}); use 'cpu', None (JAX's "
                f"default, {jax.devices()[0].platform}) or a jax.Device from jax.devices()."
            ) from None
    raise TypeError(
        f"device must be a platform name ('cpu', 'gpu'), a jax.Device or None, got {device!r}."
    )


def on_device(tree: Any, device: jax.Device) -> Any:
    """``tree``'s leaves as arrays on ``device`` (jit computes where its inputs are)."""
    return jax.device_put(jax.tree.map(jnp.asarray, tree), device)


def seed_to_key(seed: int | list[int | None] | None) -> jax.Array:
    """A key from Gymnasium's seed forms: an int, a list (combined), or None (fresh entropy)."""
    if seed is None:
        entropy = np.random.SeedSequence().generate_state(1)[0]
        return jax.random.key(int(entropy))
    if isinstance(seed, (list, tuple)):
        if all(s is None for s in seed):
            return seed_to_key(None)
        words = [0 if s is None else int(s) for s in seed]
        return jax.random.key(int(np.random.SeedSequence(words).generate_state(1)[0]))
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        return jax.random.key(int(seed))
    raise TypeError(f"seed must be an int, a list of ints or None, got {seed!r}.")


def cast_action(action: Any, dtype: np.dtype) -> np.ndarray:
    """Actions as numpy in the space's dtype (int64 -> int32, float64 -> float32).

    Other dtypes pass through to rollax's own check, which names what is valid.
    """
    action = np.asarray(action)
    if action.dtype != dtype and np.can_cast(action.dtype, dtype, "same_kind"):
        action = action.astype(dtype)
    return action


def environment(env: str | Environment | VecEnv) -> tuple[Environment, str | None]:
    """The environment definition and registered id (if any) of an id, env or ``VecEnv``."""
    if isinstance(env, VecEnv):
        return env.env, env.env_id
    if isinstance(env, Environment):
        return env, None
    if isinstance(env, str):
        vec = make(env)
        return vec.env, vec.env_id
    raise TypeError(
        f"env must be a registered id, a rollax.Environment or a rollax.VecEnv, got {env!r}."
    )


def host_vec_env(
    env: str | Environment | VecEnv,
    num_envs: int,
    autoreset_mode: str,
    reset_strategy: str | None,
    device: jax.Device,
    make_options: dict[str, Any],
) -> VecEnv:
    """The batch an adapter steps: ``num_envs`` of ``env`` in ``autoreset_mode``.

    Args:
        env: A registered id, a ``rollax.Environment`` or a ``VecEnv`` (its environment).
        num_envs: Environments in the batch (a positive integer).
        autoreset_mode: One of :data:`rollax.envs.AUTORESET_MODES`.
        reset_strategy: ``None`` for the adapters' default: on the CPU ``on_done`` below
            :data:`PER_CALL_POOL_FROM` environments and ``pool`` from there; elsewhere that
            platform's default (:func:`rollax.envs.default_reset_strategy`).
        device: Where the batch computes (only its platform matters here).
        make_options: Environment options, as for ``rollax.make`` (only with an id).

    Returns:
        A batched ``rollax.VecEnv``.

    Raises:
        ValueError: a bad ``num_envs``, an unknown id or a bad reset strategy.
        TypeError: options given with an environment object, or a bad ``env``.
    """
    if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
        raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}.")
    num_envs = int(num_envs)
    if not isinstance(env, str) and make_options:
        raise TypeError(
            f"options {sorted(make_options)} apply only when env is an id; build the "
            f"environment with them instead."
        )
    if reset_strategy is None and device.platform == "cpu":
        reset_strategy = "on_done" if num_envs < PER_CALL_POOL_FROM else "pool"
    elif reset_strategy is None:  # the default for that device, not JAX's default one
        core = make(env, **make_options).env if isinstance(env, str) else environment(env)[0]
        reset_strategy = default_reset_strategy(
            num_envs, core.costly_reset, backend=device.platform
        )
    if isinstance(env, str):
        return make(
            env,
            num_envs=num_envs,
            autoreset_mode=autoreset_mode,
            reset_strategy=reset_strategy,
            **make_options,
        )
    core, env_id = environment(env)
    return VecEnv(core, num_envs, autoreset_mode, reset_strategy, env_id)


def _key_impl_and_data(keys: jax.ShapeDtypeStruct) -> tuple[Any, jax.ShapeDtypeStruct]:
    """The PRNG implementation of typed keys like ``keys`` and the shape of their data."""
    impls = []

    def data(k: jax.Array) -> jax.Array:
        impls.append(jax.random.key_impl(k))
        return jax.random.key_data(k)

    return impls[0] if (shape := jax.eval_shape(data, keys)) and impls else None, shape


class Layout:
    """Where each leaf of a tuple of pytrees lies once packed into one flat array per dtype.

    A compiled call pays for every array that goes in or comes out (on the CPU, more than a
    small environment's whole step; the Adapters page, Stable-Baselines3, has the figure),
    and more for a typed key array, so an adapter that calls once per step hands its state,
    params and results across as a few packed arrays, keys as their raw ``uint32`` data.
    :meth:`pack` and :meth:`unpack` run inside ``jit``; :meth:`unpack` also reads numpy views
    of the packed arrays on the host (zero-copy slices) for parts without keys.

    Args:
        parts: A tuple of pytrees of arrays (or ``jax.ShapeDtypeStruct``).
    """

    def __init__(self, parts: tuple) -> None:
        dtypes: list[Any] = []
        sizes: list[int] = []
        # Per leaf: (group, start, stop, shape, key impl or None).
        self._parts: list[tuple[Any, list[tuple]]] = []
        for part in parts:
            leaves, treedef = jax.tree.flatten(part)
            slots = []
            for leaf in leaves:
                shape, dtype, impl = tuple(leaf.shape), leaf.dtype, None
                if jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key):
                    impl, data = _key_impl_and_data(jax.ShapeDtypeStruct(shape, dtype))
                    shape, dtype = tuple(data.shape), data.dtype
                dtype = np.dtype(dtype)
                if dtype not in dtypes:
                    dtypes.append(dtype)
                    sizes.append(0)
                group = dtypes.index(dtype)
                size = int(np.prod(shape, dtype=np.int64))
                slots.append((group, sizes[group], sizes[group] + size, shape, impl))
                sizes[group] += size
            self._parts.append((treedef, slots))
        self.dtypes = tuple(dtypes)
        self._key = (
            tuple(str(d) for d in dtypes),
            tuple((t, tuple((*s[:4], str(s[4])) for s in slots)) for t, slots in self._parts),
        )
        self._hash = hash(self._key)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return other is self or (isinstance(other, Layout) and self._key == other._key)

    def pack(self, parts: tuple) -> tuple[jax.Array, ...]:
        """One flat array per dtype holding every leaf of ``parts`` (same structure)."""
        groups: list[list[jax.Array]] = [[] for _ in self.dtypes]
        for part, (treedef, slots) in zip(parts, self._parts, strict=True):
            for leaf, slot in zip(treedef.flatten_up_to(part), slots, strict=True):
                if slot[4] is not None:
                    leaf = jax.random.key_data(leaf)
                groups[slot[0]].append(jnp.ravel(leaf))
        return tuple(g[0] if len(g) == 1 else jnp.concatenate(g) for g in groups)

    def unpack(self, packed: Sequence[Any], part: int) -> Any:
        """Part ``part`` of the packed tuple (slices of ``packed``: views for numpy)."""
        treedef, slots = self._parts[part]
        leaves = []
        for group, start, stop, shape, impl in slots:
            leaf = packed[group][start:stop].reshape(shape)
            leaves.append(leaf if impl is None else jax.random.wrap_key_data(leaf, impl=impl))
        return treedef.unflatten(leaves)

    def groups_of(self, part: int) -> tuple[int, ...]:
        """The indices of the packed arrays that part ``part`` reads."""
        return tuple(sorted({slot[0] for slot in self._parts[part][1]}))
