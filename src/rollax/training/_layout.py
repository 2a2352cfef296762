"""Where every leaf of a training state lives: seeds, shards of environments, and devices.

An agent is written for **one seed on one shard** of its environments. The training layer
maps it over ``num_seeds`` seeds and ``num_shards`` shards per seed, and places the result on
a mesh of devices with two axes: ``"seed"`` (seeds on different devices never communicate)
and ``"data"`` (one seed's shards on different devices average their gradients). Each agent
declares once, as a *layout* (a prefix tree of the state with one tag per subtree), what each
part of its state is:

- :data:`SEED`: one value per seed, the same on all of its shards (parameters, optimizer
  state, statistics, hyperparameters). Global shape ``(num_seeds, ...)``.
- :data:`SHARD`: one value per shard of a seed (environments, observations, keys, replay).
  Global shape ``(num_seeds, num_shards, ...)``.
- :data:`SHARED`: one value for the whole run (counters). Global shape as is.
- :data:`ENV_PARAMS`: environment params: a leaf shaped like the defaults is shared, a
  leaf with a leading axis of ``num_seeds * num_envs`` holds one value per environment (seed
  by seed) and is dealt to the shards.

The global batch never depends on the device count: ``num_envs``, minibatches and buffer
capacities are per seed, split over ``num_shards`` logical shards (a config value), and the
devices of the data axis each take whole shards. One device runs the same logical shards as
four, so results differ only by the order of floating-point reductions.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

__all__ = [
    "ENV_PARAMS",
    "map_axis",
    "map_seeds",
    "SEED",
    "SHARD",
    "SHARED",
    "Layout",
    "make_layout",
    "resolve_devices",
]

SEED = "seed"
"""One value per seed, the same on each of its shards: leading axis ``num_seeds``."""
SHARD = "shard"
"""One value per shard of each seed: leading axes ``(num_seeds, num_shards)``."""
SHARED = "shared"
"""One value for every seed and shard (counters)."""
ENV_PARAMS = "env_params"
"""Environment params: shared leaves, or one value per environment (``num_seeds *
num_envs`` leading) dealt to the shards."""

TAGS = (SEED, SHARD, SHARED, ENV_PARAMS)
SHARD_AXIS = "shards"
"""The name of the ``vmap`` axis over one device's shards of a seed (for collectives)."""


def resolve_devices(devices: int | str, who: str = "devices") -> int:
    """The number of devices ``devices`` asks for: a positive count, or ``"all"``.

    Raises:
        ValueError: not a positive count or ``"all"``, or more devices than JAX sees.
    """
    available = jax.device_count()
    if devices == "all":
        return available
    if isinstance(devices, str) and devices.isdigit():
        devices = int(devices)
    if isinstance(devices, bool) or not isinstance(devices, int) or devices < 1:
        raise ValueError(f"{who} must be a positive integer or 'all', got {devices!r}.")
    if devices > available:
        kinds = sorted({d.platform for d in jax.devices()})
        raise ValueError(
            f"{who}={devices} but JAX sees {available} device(s) ({', '.join(kinds)}); use at "
            f"most {available}, or 'all'."
        )
    return devices


def parse_device(spec: str, who: str = "actor_device") -> tuple[str | None, int]:
    """``spec``'s platform (``None``: any) and index: ``"1"`` or ``"cpu:0"``, checked for form.

    Raises:
        ValueError: ``spec`` is neither an index nor ``PLATFORM:INDEX``.
    """
    platform, _, index = spec.rpartition(":")
    if not index.isdigit() or (":" in spec and not platform.isidentifier()):
        raise ValueError(
            f"{who} must be an index into jax.devices() such as '1', or a platform and index "
            f"such as 'cpu:0', got {spec!r}."
        )
    return platform or None, int(index)


def find_device(spec: str, who: str = "actor_device") -> jax.Device:
    """The device ``spec`` names (see :func:`parse_device`).

    Raises:
        ValueError: a malformed ``spec``, or one that names a device JAX does not see.
    """
    platform, index = parse_device(spec, who)
    try:
        devices = jax.devices(platform)
    except RuntimeError:
        devices = []
    if index >= len(devices):
        seen = ", ".join(f"{d.platform}:{d.id}" for d in jax.devices())
        raise ValueError(
            f"{who}={spec!r} names no device JAX sees ({seen}); on a CPU, more devices come "
            "from XLA_FLAGS=--xla_force_host_platform_device_count=N (the command line sets "
            "one per core)."
        )
    return devices[index]


@dataclasses.dataclass(frozen=True)
class Layout:
    """How a run's seeds and shards sit on devices.

    Attributes:
        num_seeds: Seeds trained at once.
        num_shards: Logical shards of each seed's environments (and replay, minibatches).
        mesh: The device mesh, axes ``("seed", "data")``; ``None`` on one device.
    """

    num_seeds: int
    num_shards: int
    mesh: Mesh | None = None

    @property
    def seed_devices(self) -> int:
        """Devices along the seed axis."""
        return 1 if self.mesh is None else int(self.mesh.shape["seed"])

    @property
    def data_devices(self) -> int:
        """Devices along the data axis (each takes whole shards of every seed it holds)."""
        return 1 if self.mesh is None else int(self.mesh.shape["data"])

    @property
    def local_seeds(self) -> int:
        """Seeds on each device."""
        return self.num_seeds // self.seed_devices

    @property
    def local_shards(self) -> int:
        """Shards of a seed on each device."""
        return self.num_shards // self.data_devices

    # ------------------------------------------------------------------ collectives

    def mean(self, tree: Any) -> Any:
        """The mean over a seed's shards, inside a mapped piece (identity for one shard).

        The same value on every shard afterwards: what a gradient or a batch statistic of
        the seed's whole batch is.
        """
        if self.local_shards > 1:
            tree = jax.lax.pmean(tree, SHARD_AXIS)
        if self.data_devices > 1:
            tree = _packed_pmean(tree, "data")
        return tree

    @property
    def shard_mean(self) -> Callable[[Any], Any] | None:
        """:meth:`mean` where a seed has several shards, else ``None`` (nothing to average)."""
        return self.mean if self.num_shards > 1 else None

    # ------------------------------------------------------------------ placement

    @property
    def replicated(self) -> NamedSharding | None:
        """A sharding that puts the whole array on every device (every process reads it).

        ``None`` on one device.
        """
        return None if self.mesh is None else NamedSharding(self.mesh, P())

    def spec(self, tag: str) -> P:
        """The ``PartitionSpec`` of a leaf tagged ``tag`` (its global array)."""
        return {SEED: P("seed"), SHARD: P("seed", "data"), SHARED: P(), ENV_PARAMS: P()}[tag]

    def shardings(self, layout: Any, tree: Any) -> Any:
        """The ``NamedSharding`` of every leaf of ``tree`` (``None`` leaves on one device)."""

        def place(tag: str, subtree: Any) -> Any:
            sharding = None if self.mesh is None else NamedSharding(self.mesh, self.spec(tag))
            return jax.tree.map(lambda _: sharding, subtree)

        return jax.tree.map(place, layout, tree)

    def map(
        self,
        fn: Callable[..., Any],
        in_layouts: Sequence[Any],
        out_layout: Any,
    ) -> Callable[..., Any]:
        """``fn`` for one seed on one shard, as a function of global arrays.

        :meth:`map_local` inside :meth:`on_devices`. :data:`ENV_PARAMS` arguments must
        already be a shard view (see :meth:`env_params_view`).

        Args:
            fn: The per-shard function.
            in_layouts: One layout (a tag, or a prefix tree of tags) per positional argument.
            out_layout: The layout of ``fn``'s result.
        """
        local = self.map_local(fn, in_layouts, out_layout)
        return self.on_devices(local, in_layouts, out_layout)

    def map_local(
        self, fn: Callable[..., Any], in_layouts: Sequence[Any], out_layout: Any
    ) -> Callable[..., Any]:
        """``fn`` for one seed on one shard, over one device's seeds and shards.

        ``vmap`` over the device's seeds, and over each seed's shards with the axis name
        that :meth:`mean` reduces over; a single seed or shard is called without a batch
        axis (XLA:CPU runs unbatched products faster than batches of one).
        """
        in_seed = [_axes(t, SEED) for t in in_layouts]
        in_shard = [_axes(t, SHARD) for t in in_layouts]
        out_seed, out_shard = _axes(out_layout, SEED), _axes(out_layout, SHARD)
        per_seed = map_axis(fn, self.local_shards, SHARD_AXIS, in_shard, out_shard)
        return map_axis(per_seed, self.local_seeds, None, in_seed, out_seed)

    def on_devices(
        self, fn: Callable[..., Any], in_layouts: Sequence[Any], out_layout: Any
    ) -> Callable[..., Any]:
        """``fn`` of one device's blocks as a function of global arrays (``jax.shard_map``).

        The identity on one device. Collectives over the vmap axis of a device's shards do
        not pass ``shard_map``'s replication checks, so they are off; the ``vmap`` over
        those shards checks instead that every :data:`SEED` output is the same on all of a
        seed's shards, and the equivalence tests check it across devices.
        """
        if self.mesh is None:
            return fn
        return jax.shard_map(
            fn,
            mesh=self.mesh,
            in_specs=tuple(_specs(self, t) for t in in_layouts),
            out_specs=_specs(self, out_layout),
            check_vma=False,
        )

    def per_seed(
        self, fn: Callable[..., Any], layouts: Sequence[Any], out_axes: Any = 0
    ) -> Callable[..., Any]:
        """``fn`` of one seed's slice of its arguments, over every seed: a per-seed view.

        For an agent's inspection helpers (its Q-values of given observations): see
        :func:`map_seeds`. ``layouts`` gives one layout per positional argument.
        """
        return map_seeds(fn, self.num_seeds, layouts, out_axes)

    def on_every_shard(
        self, fn: Callable[[Any], tuple[Any, Any]], state_layout: Any, env: Any, num_envs: int
    ) -> Callable[[Any], tuple[Any, Any]]:
        """``fn(state) -> (state, out)`` of one shard, run on a whole training state.

        For an agent's inspection helpers (one rollout without an update): every seed's
        shards run ``fn`` with their slice of the state and of its environment params.

        Args:
            fn: One shard's function of its state.
            state_layout: The state's layout (its ``env_params`` tagged
                :data:`ENV_PARAMS`).
            env: One shard's environments (for their default params).
            num_envs: Environments per seed.

        Returns:
            ``state -> (state, out)`` on the whole state; ``out`` leaves lead with
            ``(num_seeds, num_shards)``.
        """

        def run(state: Any) -> tuple[Any, Any]:
            view, tags = self.env_params_view(state.env_params, env.default_params, num_envs)
            tagged = state_layout.replace(env_params=tags)
            new, out = self.map(fn, (tagged,), (tagged, SHARD))(state.replace(env_params=view))
            return new.replace(env_params=state.env_params), out

        return run

    def env_params_view(self, params: Any, default: Any, num_envs: int) -> tuple[Any, Any]:
        """Environment params as the mapped pieces take them, with their layout.

        Args:
            params: The state's params: leaves shaped like ``default`` (shared), or with a
                leading axis of ``num_seeds * num_envs`` (one value per environment).
            default: The environment's default params.
            num_envs: Environments per seed.

        Returns:
            ``(view, layout)``: per-environment leaves reshaped to ``(num_seeds, num_shards,
            num_envs // num_shards, ...)`` and tagged :data:`SHARD`, shared ones tagged
            :data:`SHARED`.
        """
        per_shard = num_envs // self.num_shards

        def view(leaf: Any, ref: Any) -> tuple[Any, str]:
            if np.ndim(leaf) == np.ndim(ref):
                return leaf, SHARED
            leaf = jnp.asarray(leaf)
            return leaf.reshape(self.num_seeds, self.num_shards, per_shard, *leaf.shape[1:]), SHARD

        pairs = jax.tree.map(view, params, default)
        is_pair = lambda x: isinstance(x, tuple) and len(x) == 2 and isinstance(x[1], str)  # noqa: E731
        return (
            jax.tree.map(lambda p: p[0], pairs, is_leaf=is_pair),
            jax.tree.map(lambda p: p[1], pairs, is_leaf=is_pair),
        )


def _packed_pmean(tree: Any, axis_name: str) -> Any:
    """``jax.lax.pmean(tree, axis_name)`` as one collective per dtype rather than per leaf.

    The leaves of each dtype are concatenated into one vector, averaged, and cut back: the
    same values, element by element. Across devices a collective's cost is mostly a fixed
    rendezvous, and XLA:CPU pays it per operand even of a combined all-reduce (the Seeds,
    shards and devices page).
    """
    leaves, treedef = jax.tree.flatten(tree)
    by_dtype: dict[Any, list[int]] = {}
    for i, leaf in enumerate(leaves):
        by_dtype.setdefault(jnp.result_type(leaf), []).append(i)
    out = list(leaves)
    for indices in by_dtype.values():
        flat = jnp.concatenate([jnp.ravel(leaves[i]) for i in indices])
        flat = jax.lax.pmean(flat, axis_name)
        offset = 0
        for i in indices:
            size = int(np.size(leaves[i]))
            out[i] = flat[offset : offset + size].reshape(np.shape(leaves[i]))
            offset += size
    return jax.tree.unflatten(treedef, out)


def _axes(layout: Any, level: str) -> Any:
    """``vmap`` axes of a layout at the seed level (``SEED``) or the shard level (``SHARD``)."""

    def axis(tag: str) -> int | None:
        if tag not in TAGS:
            raise ValueError(f"Unknown layout tag {tag!r}; use one of {TAGS}.")
        return 0 if tag == SHARD or (tag == SEED and level == SEED) else None

    return jax.tree.map(axis, layout)


def _specs(layout: Layout, tags: Any) -> Any:
    return jax.tree.map(layout.spec, tags)


def map_seeds(
    fn: Callable[..., Any], num_seeds: int, layouts: Sequence[Any], out_axes: Any = 0
) -> Callable[..., Any]:
    """``fn`` of one seed's slice of its arguments, over every seed (no shards, no mesh).

    For the programs that run rarely, on whatever devices the state is on (evaluation,
    video): :data:`SEED` and :data:`SHARD` leaves are sliced by seed, the others passed
    whole. ``layouts`` gives one layout per positional argument; ``out_axes`` is ``vmap``'s.
    """
    return map_axis(fn, num_seeds, None, [_axes(t, SEED) for t in layouts], out_axes)


def map_axis(
    fn: Callable[..., Any], size: int, name: str | None, in_axes: list[Any], out_axes: Any
) -> Callable[..., Any]:
    """``jax.vmap(fn, in_axes, out_axes, axis_name=name)``, but a size of 1 runs unbatched.

    With one member, ``fn`` is called on the slices (the mapped axes removed) and the axes
    are put back on the outputs: the same values, but XLA:CPU runs unbatched products faster
    than batches of one (the Seeds, shards and devices page).

    Args:
        fn: The per-member function.
        size: The size of the mapped axis.
        name: The ``vmap`` axis name (for collectives); unused for one member.
        in_axes: One entry per positional argument: an axis, ``None``, or a prefix tree of
            them.
        out_axes: As ``vmap``'s.
    """
    if size != 1:
        return jax.vmap(fn, in_axes=tuple(in_axes), out_axes=out_axes, axis_name=name)

    def one(*args: Any) -> Any:
        if len(in_axes) != len(args):
            raise ValueError(f"{len(in_axes)} in_axes for {len(args)} arguments.")
        sliced = [
            _apply(a, arg, lambda x, axis: jax.lax.index_in_dim(x, 0, axis, False))
            for a, arg in zip(in_axes, args, strict=True)
        ]
        return _apply(out_axes, fn(*sliced), lambda x, axis: jnp.expand_dims(x, axis))

    return one


def _apply(axes: Any, tree: Any, op: Callable[[Any, int], Any]) -> Any:
    """``op(leaf, axis)`` on every leaf of ``tree`` whose axis (prefix tree ``axes``) is set."""
    return jax.tree.map(
        lambda a, sub: sub if a is None else jax.tree.map(lambda x: op(x, a), sub),
        axes,
        tree,
        is_leaf=lambda x: x is None,
    )


def mesh_shape(num_seeds: int, devices: int | str) -> tuple[int, int]:
    """``(seed_devices, data_devices)``: how ``devices`` sit over ``num_seeds`` seeds.

    Seeds go to devices first (they never communicate): the seed axis takes ``gcd(num_seeds,
    devices)`` devices and the data axis the rest. ``"auto"``: the most devices that divide
    ``num_seeds``, all on the seed axis (in a run of several processes, every device, as
    ``"all"``: each process must hold part of the mesh).

    Raises:
        ValueError: more devices than exist, or not a count, ``"all"`` or ``"auto"``.
    """
    if devices == "auto" and jax.process_count() > 1:
        count = resolve_devices("all")  # every process must hold part of the mesh
    elif devices == "auto":  # the seed axis alone, on as many devices as divide it
        available = jax.device_count()
        count = max(d for d in range(1, available + 1) if num_seeds % d == 0)
    else:
        count = resolve_devices(devices)
    seed_devices = math.gcd(num_seeds, count)
    return seed_devices, count // seed_devices


def make_layout(num_seeds: int, num_shards: int, devices: int | str = 1) -> Layout:
    """The layout of ``num_seeds`` seeds of ``num_shards`` shards on ``devices`` devices.

    Seeds go to devices first (they never communicate): the seed axis takes ``gcd(num_seeds,
    devices)`` devices and the data axis the rest, which must divide ``num_shards``.
    ``"auto"``: the most devices that divide ``num_seeds``, all on the seed axis (in a run of
    several processes, every device, as ``"all"``: each process must hold part of the mesh).

    Raises:
        ValueError: more devices than exist, or a data axis that does not divide the shards
            (naming the shard counts and device counts that would work).
    """
    seed_devices, data_devices = mesh_shape(num_seeds, devices)
    count = seed_devices * data_devices
    if count == 1:
        return Layout(num_seeds, num_shards)
    if num_shards % data_devices:
        fits = [d for d in range(1, count + 1) if num_shards % (d // math.gcd(num_seeds, d)) == 0]
        raise ValueError(
            f"devices={count} with num_seeds={num_seeds} puts {seed_devices} device(s) on the "
            f"seed axis and {data_devices} on the data axis, which must divide num_shards="
            f"{num_shards}. Set num_shards to a multiple of {data_devices} (the global batch "
            f"stays the same: each seed's num_envs is split over the shards), or use devices "
            f"in {fits}."
        )
    mesh = jax.make_mesh(
        (seed_devices, data_devices),
        ("seed", "data"),
        axis_types=(jax.sharding.AxisType.Auto,) * 2,
        devices=jax.devices()[:count],
    )
    return Layout(num_seeds, num_shards, mesh)
