"""Population-based training: members of one program that copy better members and explore.

The population is the state's seed axis, as for a sweep (``num_seeds`` seeds of each grid
point). Every ``interval`` environment steps, between compiled chunks and outside ``jit``:

- **exploit**: the bottom ``fraction`` of the members by their recent mean episode return,
  and every member whose parameters or losses stopped being finite, copy what a member holds
  per seed (the parts its agent's state layout tags ``seed``: parameters, optimizer state,
  observation statistics, hyperparameters) from a member drawn from the top ``fraction``.
  What a member holds per shard stays its own: its environments, key chain, recurrent
  carries and replay buffer.
- **explore**: each member that copied changes the copied values of the explored fields:
  times ``1 - perturb`` or ``1 + perturb``, or with probability ``resample`` drawn anew within
  the field's bounds (log-uniform when both bounds are positive), then clipped to them.

The copy is one compiled program, a gather along the seed axis on the devices that hold the
members, compiled once: the weights never leave the devices. Decisions are made on the host
from a few numbers per member, with a numpy generator whose state the run keeps, so every
process of a multi-process run makes the same decision. Only fields the agent holds as data
can evolve (its config class's ``SWEEPABLE`` floats); the others set shapes or which code is
compiled, which every member of one program shares.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rollax.training import SEED, SHARD, Layout

__all__ = [
    "PBTConfig",
    "choose_sources",
    "explore_values",
    "hyperparam_leaves",
    "leaf_values",
    "evolvable_fields",
    "make_exploit",
]


@dataclasses.dataclass(frozen=True)
class PBTConfig:
    """How a population trains: when members exploit, and what they explore.

    The run's ``RunConfig.pbt_*`` fields (:meth:`from_run_config`); ``interval=0`` trains
    without population-based training.
    """

    interval: int = 0
    """Environment steps per member between two exploit-and-explore steps; 0: no PBT."""
    explore: tuple[str, ...] = ()
    """The fields that evolve with their bounds, ``NAME=LOW,HIGH`` entries:
    ``("learning_rate=1e-5,1e-2", "ent_coef=0,0.05")``. Each is a float field the agent
    holds as data (its config class's ``SWEEPABLE``)."""
    fraction: float = 0.25
    """The bottom fraction of members that copy, and the top fraction they copy from:
    ``ceil(fraction * members)`` members each, ``0 < fraction <= 0.5``."""
    perturb: float = 0.2
    """A copied value is multiplied by ``1 - perturb`` or ``1 + perturb``, with equal chance."""
    resample: float = 0.25
    """The chance that a copied value is drawn anew within its bounds instead."""

    @classmethod
    def from_run_config(cls, run_config: Any) -> PBTConfig:
        """The settings of a run's ``RunConfig`` (its ``pbt_*`` fields)."""
        return cls(
            interval=run_config.pbt_interval,
            explore=tuple(run_config.pbt_explore),
            fraction=run_config.pbt_fraction,
            perturb=run_config.pbt_perturb,
            resample=run_config.pbt_resample,
        )

    @property
    def factors(self) -> tuple[float, float]:
        """The two factors a copied value is multiplied by."""
        return (1.0 - self.perturb, 1.0 + self.perturb)

    @property
    def enabled(self) -> bool:
        """Whether the run trains its members as a population."""
        return self.interval > 0

    def check(self) -> None:
        """Raise a ``ValueError`` naming the first setting out of range, and what is valid."""
        if isinstance(self.interval, bool) or not isinstance(self.interval, int):
            raise ValueError(f"pbt_interval must be an integer, got {self.interval!r}.")
        if self.interval < 0:
            raise ValueError(f"pbt_interval must be 0 (no PBT) or positive, got {self.interval}.")
        if not (isinstance(self.fraction, int | float) and 0 < self.fraction <= 0.5):
            raise ValueError(f"pbt_fraction must be in (0, 0.5], got {self.fraction!r}.")
        if not (isinstance(self.perturb, int | float) and 0 < self.perturb < 1):
            raise ValueError(f"pbt_perturb must be in (0, 1), got {self.perturb!r}.")
        if not (isinstance(self.resample, int | float) and 0 <= self.resample <= 1):
            raise ValueError(f"pbt_resample must be in [0, 1], got {self.resample!r}.")
        if isinstance(self.explore, str) or not all(isinstance(e, str) for e in self.explore):
            raise ValueError(f"pbt_explore must be NAME=LOW,HIGH strings, got {self.explore!r}.")
        if self.enabled and not self.explore:
            raise ValueError(
                "pbt_explore is empty: name the fields that evolve with their bounds, e.g. "
                "learning_rate=1e-5,1e-2."
            )

    def bounds(self, config: Any) -> dict[str, tuple[float, float]]:
        """Each explored field's ``(low, high)``, checked against the agent's ``config``.

        Every member's value (a sweep's grid points differ) must lie within the bounds.

        Raises:
            ValueError: naming the entry or setting that does not fit, and what would.
        """
        self.check()
        cls = type(config)
        name_of = cls.__name__
        hints = typing.get_type_hints(cls)
        floats = evolvable_fields(cls)
        out: dict[str, tuple[float, float]] = {}
        for entry in self.explore:
            name, eq, text = entry.partition("=")
            name = name.strip()
            parts = text.split(",")
            try:
                low, high = (float(p) for p in parts)
            except ValueError:
                low = high = math.nan
            if not eq or len(parts) != 2 or not (low < high):
                raise ValueError(
                    f"pbt_explore: {entry!r} is not NAME=LOW,HIGH with LOW < HIGH "
                    "(e.g. learning_rate=1e-5,1e-2)."
                )
            if name in out:
                raise ValueError(f"pbt_explore: {name!r} is given twice.")
            if name not in floats:
                if name not in hints:
                    why = f"is not a field of {name_of}"
                elif name in getattr(cls, "SWEEPABLE", ()):
                    why = "is data but not a number, which exploring perturbs (sweep it instead)"
                else:
                    why = (
                        "is not a float the agent holds as data (it sets shapes or loop "
                        "lengths, chooses which code is compiled, or is compiled in as a "
                        "constant), which every member of one program shares"
                    )
                raise ValueError(
                    f"pbt_explore: {name!r} {why}. Fields {name_of} can evolve: "
                    f"{', '.join(floats) or 'none'}."
                )
            unused = config.unused_data() if hasattr(config, "unused_data") else {}
            if name in unused:
                raise ValueError(
                    f"pbt_explore: {name!r} would change nothing in this {name_of}'s compiled "
                    f"step: {unused[name]}."
                )
            for member in config.member_configs():
                value = getattr(member, name)
                if not low <= value <= high:
                    raise ValueError(
                        f"pbt_explore: {name}={value!r} in {name_of} lies outside its bounds "
                        f"[{low}, {high}]; widen them or start inside."
                    )
                for bound in (low, high):  # a member may reach either: both must be valid
                    try:
                        dataclasses.replace(member, **{name: bound}).validate()
                    except ValueError as e:
                        raise ValueError(
                            f"pbt_explore: the bound {name}={bound!r} is not a valid {name_of}: {e}"
                        ) from None
            out[name] = (low, high)
        return out


def evolvable_fields(config_type: type) -> list[str]:
    """The fields of an agent's config class that a population can evolve.

    Its ``SWEEPABLE`` fields (held as data in the training state) that are floats.
    """
    hints = typing.get_type_hints(config_type)
    return [n for n in getattr(config_type, "SWEEPABLE", ()) if hints.get(n) is float]


def choose_sources(
    scores: np.ndarray, finite: np.ndarray, fraction: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Which member each member copies: ``(source, replaced)``, int and bool ``(members,)``.

    The ``ceil(fraction * members)`` lowest-scoring members with a score, and every member
    that is not ``finite``, copy a member drawn uniformly from the as many highest-scoring
    finite members (from every finite member while none has a score). A score of NaN (no
    episode ended) ranks neither top nor bottom; ties keep member order (the lower index
    ranks higher).

    Raises:
        ValueError: no member is finite, so none can be copied.
    """
    scores = np.asarray(scores, np.float64)
    finite = np.asarray(finite, bool)
    members = scores.shape[0]
    count = math.ceil(fraction * members)
    order = np.argsort(-scores, kind="stable")  # NaN scores last
    ranked = [int(m) for m in order if finite[m] and not np.isnan(scores[m])]
    top = ranked[:count]
    if not top:  # no finite member scored yet: a diverged member copies any finite one
        top = [m for m in range(members) if finite[m]]
        ranked = []
    if not top:
        raise ValueError(
            "Every member reached non-finite values, so none can be copied: the whole "
            "population diverged."
        )
    bottom = set(ranked[-count:]) - set(top) if len(ranked) > count else set()
    bottom |= {m for m in range(members) if not finite[m]}
    replaced = np.zeros(members, bool)
    replaced[sorted(bottom)] = True
    source = np.arange(members)
    picks = rng.integers(0, len(top), size=members)
    source[replaced] = np.asarray(top)[picks[replaced]]
    return source, replaced


def explore_values(
    values: dict[str, np.ndarray],
    source: np.ndarray,
    replaced: np.ndarray,
    bounds: dict[str, tuple[float, float]],
    factors: tuple[float, float],
    resample_probability: float,
    rng: np.random.Generator,
) -> dict[str, np.ndarray]:
    """The explored fields' values after an exploit, float64 ``(members,)`` each.

    A member that copied takes its source's value, times a factor drawn from ``factors``
    or, with probability ``resample_probability``, a value drawn within the bounds
    (log-uniform when both are positive, else uniform), clipped to the bounds. The others
    keep theirs. Draws are made for every member and field in a fixed order, so the
    generator advances the same way whatever is replaced.
    """
    out = {}
    for name in sorted(values):
        low, high = bounds[name]
        current = np.asarray(values[name], np.float64)
        copied = current[source]
        factor = np.asarray(factors, np.float64)[rng.integers(0, 2, size=current.shape)]
        resample = rng.random(current.shape) < resample_probability
        uniform = rng.random(current.shape)
        if low > 0:
            drawn = np.exp(np.log(low) + uniform * (np.log(high) - np.log(low)))
        else:
            drawn = low + uniform * (high - low)
        moved = np.clip(np.where(resample, drawn, copied * factor), low, high)
        out[name] = np.where(replaced, moved, current)
    return out


def hyperparam_leaves(
    hyperparams: Callable[[Any], Any], config: Any, fields: typing.Iterable[str]
) -> dict[str, list[int]]:
    """For each field, the indices of the hyperparameter leaves it determines.

    Found by changing the field alone and seeing which leaves of ``hyperparams(config)``
    change (a field may set a leaf of another name, e.g. SAC's ``target_entropy_scale``
    sets ``target_entropy``).
    """
    base = jax.tree.leaves(hyperparams(config))
    out = {}
    for name in fields:
        value = getattr(config, name)
        moved = config.replace(**{name: value * 1.5 + 0.25})
        leaves = jax.tree.leaves(hyperparams(moved))
        out[name] = [i for i, (a, b) in enumerate(zip(base, leaves, strict=True)) if a != b]
    return out


def leaf_values(
    hyperparams: Callable[[Any], Any],
    members: list[Any],
    leaves: dict[str, list[int]],
    values: dict[str, np.ndarray],
) -> dict[int, np.ndarray]:
    """The hyperparameter leaves the explored fields determine, for their new ``values``.

    Args:
        hyperparams: The agent's ``config -> hparams``.
        members: Every member's configuration (``config.member_configs()``).
        leaves: :func:`hyperparam_leaves` of the explored fields.
        values: Each field's value per member, ``(members,)``.

    Returns:
        Flat leaf index to float32 ``(members,)``: each member's leaf, computed from its
        configuration with the fields set to its values.
    """
    indices = sorted({i for group in leaves.values() for i in group})
    out = {i: np.zeros(len(members), np.float32) for i in indices}
    for m, config in enumerate(members):
        moved = config.replace(**{name: float(values[name][m]) for name in leaves})
        flat = jax.tree.leaves(hyperparams(moved))
        for i in indices:
            out[i][m] = flat[i]
    return out


def make_exploit(state_layout: Any, layout: Layout, hparams_type: type) -> Callable[..., Any]:
    """The compiled copy: ``(state, source, whole, leaves) -> state``.

    Every leaf under a ``seed`` tag of ``state_layout`` is gathered along the seed axis by
    ``source`` (int32 ``(members,)``). A member marked in ``whole`` (bool ``(members,)``: one
    that diverged) takes its source's ``shard`` leaves too (environments, observations,
    carries, replay), since they may hold what its non-finite policy did, all but its keys,
    so that it does not repeat its source's draws. ``leaves`` maps the flat index of a
    hyperparameter leaf to its new float32 ``(members,)`` values: a leaf of the state's one
    node of ``hparams_type`` (what the agent's ``hyperparams`` returns: PPO keeps it as
    ``state.hparams``, as PQN does, and DQN, SAC and TD3 as ``state.learner.hparams``). The
    result keeps the state's shardings on ``layout``'s devices; it compiles once per state
    structure.
    """

    def exploit(
        state: Any, source: jax.Array, whole: jax.Array, leaves: dict[int, jax.Array]
    ) -> Any:
        def copy_shard(x: jax.Array) -> jax.Array:
            if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
                return x
            pick = whole.reshape(whole.shape + (1,) * (x.ndim - 1))
            return jnp.where(pick, jnp.take(x, source, axis=0), x)

        def gather(tag: str, subtree: Any) -> Any:
            if tag == SEED:
                return jax.tree.map(lambda x: jnp.take(x, source, axis=0), subtree)
            if tag == SHARD:
                return jax.tree.map(copy_shard, subtree)
            return subtree

        def explored(hparams: Any) -> Any:
            if not isinstance(hparams, hparams_type):
                return hparams
            flat, treedef = jax.tree.flatten(hparams)
            for index, value in leaves.items():
                flat[index] = value.astype(flat[index].dtype)
            return jax.tree.unflatten(treedef, flat)

        out = jax.tree.map(gather, state_layout, state)
        out = jax.tree.map(explored, out, is_leaf=lambda x: isinstance(x, hparams_type))
        if layout.mesh is not None:  # where the state was: the seed axis over its devices
            out = jax.lax.with_sharding_constraint(out, layout.shardings(state_layout, out))
        return out

    return jax.jit(exploit)
