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
import json
import math
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rollax._files import wrote
from rollax.training._layout import SEED, SHARD, Layout
from rollax.training._run_dir import is_writer, read_metrics, write_atomic
from rollax.training._sinks import seed_return_fields

__all__ = [
    "HISTORY",
    "PBTConfig",
    "Population",
    "ScheduleReplay",
    "best_lineage",
    "check_population",
    "choose_sources",
    "explore_values",
    "hyperparam_leaves",
    "leaf_values",
    "make_exploit",
    "read_history",
]

HISTORY = "population.jsonl"
"""The population's history in a run directory: one JSON object per line, the first the
members' starting values (``"event": "start"``), then one per exploit-and-explore step."""


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
        sweepable = tuple(getattr(cls, "SWEEPABLE", ()))
        hints = typing.get_type_hints(cls)
        floats = [n for n in sweepable if hints.get(n) is float]
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
                why = (
                    f"is not a field of {name_of}"
                    if name not in hints
                    else "is not a float the agent holds as data (it sets shapes or loop "
                    "lengths, chooses which code is compiled, or is compiled in as a "
                    "constant), which every member of one program shares"
                )
                raise ValueError(
                    f"pbt_explore: {name!r} {why}. Fields {name_of} can evolve: "
                    f"{', '.join(floats) or 'none'}."
                )
            for member in config.member_configs():
                value = getattr(member, name)
                if not low <= value <= high:
                    raise ValueError(
                        f"pbt_explore: {name}={value!r} in {name_of} lies outside its bounds "
                        f"[{low}, {high}]; widen them or start inside."
                    )
            out[name] = (low, high)
        return out


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
    ``state.hparams``, DQN and SAC as ``state.learner.hparams``). The
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


def read_history(path: Path) -> list[dict[str, Any]]:
    """The events of a ``population.jsonl``, oldest first ([] for a missing file).

    A last line a kill cut short (no line end) is left out.
    """
    if not path.is_file():
        return []
    text = path.read_text()
    complete = text[: text.rfind("\n") + 1]
    return [json.loads(line) for line in complete.splitlines() if line.strip()]


def check_population(agent: Any, run_config: Any) -> None:
    """Raise a ``ValueError`` if the run's PBT settings do not fit its agent (before compiling).

    PBT needs at least two members and explored fields the agent holds as data.
    """
    settings = PBTConfig.from_run_config(run_config)
    if not settings.enabled:
        return
    settings.bounds(agent.config)
    if agent.num_seeds < 2:
        raise ValueError(
            f"pbt_interval={settings.interval}: population-based training needs at least 2 "
            f"members, and {type(agent.config).__name__} makes {agent.num_seeds} (num_seeds "
            "times the sweep's grid points); raise num_seeds."
        )
    if agent.hyperparams is None:
        raise ValueError(f"The {agent.name} agent holds no hyperparameters as data to explore.")


def _list(values: np.ndarray) -> list[Any]:
    """``values`` for JSON: floats as they are, NaN as ``null``."""
    return [None if isinstance(v, float) and math.isnan(v) else v for v in values.tolist()]


class Population:
    """A run's population between its chunks: scores, decisions, the copy and the history.

    Built at the start of the training loop, and again on resume from the history and the
    ``metrics.csv`` rows up to the checkpoint, so a resumed run makes the decisions the
    run that never stopped made. A member's score is the mean, over the logging intervals
    since the last step, of its ``metrics.csv`` return (the value written, so that a resumed
    run reads the same numbers); intervals in which it ended no episode are left out.

    Args:
        run: The run (``run.state`` at ``run.env_steps``).
    """

    def __init__(self, run: Any) -> None:
        agent, config = run.agent, run.config
        self.settings = PBTConfig.from_run_config(run.run_config)
        self.bounds = self.settings.bounds(config)
        self.members = config.member_configs()
        self.hyperparams = agent.hyperparams
        self.leaves = hyperparam_leaves(agent.hyperparams, config, self.bounds)
        self.columns = seed_return_fields(config.num_seeds, config.sweep)
        self.seed = int(run.run_config.seed)
        self.exploit = make_exploit(
            agent.state_layout, agent.layout, type(agent.hyperparams(config))
        )
        self.path = run.directory.path / HISTORY
        history = [e for e in read_history(self.path) if e["env_steps"] <= run.env_steps]
        if history:
            last = history[-1]
            self.values = {k: np.asarray(v, np.float64) for k, v in last["values"].items()}
            self.last_step = int(last["env_steps"])
            if is_writer():  # what a kill left past the checkpoint is done again
                lines = "".join(json.dumps(e) + "\n" for e in history)
                write_atomic(self.path, lines.encode())
        else:
            self.values = {
                name: np.asarray([getattr(m, name) for m in self.members], np.float64)
                for name in self.bounds
            }
            self.last_step = run.env_steps
            self._record({"env_steps": run.env_steps, "event": "start", **self._values()})
        _, rows = read_metrics(run.directory.metrics)
        self.window = [
            self._returns(row)
            for row in rows
            if self.last_step < int(row["env_steps"]) <= run.env_steps
        ]

    def _values(self) -> dict[str, Any]:
        return {"values": {k: v.tolist() for k, v in self.values.items()}}

    def _returns(self, row: dict[str, Any]) -> np.ndarray:
        """Each member's return in a ``metrics.csv`` row, NaN where it ended no episode."""
        cells = [row.get(c, "") for c in self.columns]
        return np.asarray([float(c) if c != "" else np.nan for c in cells], np.float64)

    def _record(self, event: dict[str, Any]) -> None:
        if is_writer():
            with self.path.open("a") as f:
                f.write(json.dumps(event) + "\n")
                f.flush()
            wrote(self.path)

    def observe(self, row: dict[str, Any]) -> None:
        """Count a logging interval's ``metrics.csv`` row towards the members' scores."""
        self.window.append(self._returns(row))

    def due(self, env_steps: int) -> bool:
        """Whether an exploit-and-explore step is due at ``env_steps``."""
        return env_steps - self.last_step >= self.settings.interval

    def scores(self) -> np.ndarray:
        """float64 ``(members,)``: each member's mean return since the last step (NaN: none)."""
        if not self.window:
            return np.full(len(self.columns), np.nan)
        stacked = np.stack(self.window)
        counted = (~np.isnan(stacked)).sum(axis=0)
        total = np.where(np.isnan(stacked), 0.0, stacked).sum(axis=0)
        return np.where(counted > 0, total / np.maximum(counted, 1), np.nan)

    def step(
        self, state: Any, env_steps: int, finite: np.ndarray
    ) -> tuple[Any, dict[str, Any] | None]:
        """Exploit and explore at ``env_steps``: the new state and the event recorded.

        With members that are not ``finite`` (they diverged), only they copy, at once;
        otherwise the bottom fraction copies the top. While no member has a score (no
        episode has ended since the last step), nothing happens (``None``): the step is
        taken after the first interval that ends one.
        """
        finite = np.asarray(finite, bool)
        scores = self.scores()
        if finite.all() and np.isnan(scores).all():  # no member has ended an episode yet:
            return state, None  # the step waits for the first scores
        rng = np.random.default_rng([self.seed, env_steps])
        source, replaced = choose_sources(scores, finite, self.settings.fraction, rng)
        diverged = not finite.all()
        if diverged:  # out of turn: only the diverged members are replaced
            replaced &= ~finite
            source = np.where(replaced, source, np.arange(source.shape[0]))
        self.values = explore_values(
            self.values, source, replaced, self.bounds, self.settings.factors,
            self.settings.resample, rng,
        )  # fmt: skip
        leaves = leaf_values(self.hyperparams, self.members, self.leaves, self.values)
        state = self.exploit(
            state, source.astype(np.int32), ~finite, {i: v for i, v in leaves.items()}
        )
        event = {
            "env_steps": env_steps,
            "event": "diverged" if diverged else "exploit",
            "scores": _list(scores),
            "source": source.tolist(),
            "replaced": replaced.tolist(),
            **self._values(),
        }
        self._record(event)
        self.last_step = env_steps
        self.window = []
        return state, event


def best_lineage(directory: Path) -> tuple[int, list[tuple[int, dict[str, float]]]]:
    """The best member of a population run, and the schedule its lineage followed.

    The best member is the one whose final evaluation (``eval.json``, deterministic policy)
    is highest, or without one the highest scorer at the last step. Its lineage follows it
    back through the members it copied; the schedule is the explored values that lineage
    held from each step of the history on: ``[(env_steps, {name: value}), ...]``, from 0.

    Raises:
        ValueError: a directory without a population history.
    """
    history = read_history(Path(directory) / HISTORY)
    if not history:
        raise ValueError(f"{directory} holds no {HISTORY}: its run did not train a population.")
    members = len(next(iter(history[0]["values"].values())))
    evaluation = Path(directory) / "eval.json"
    scores = None
    if evaluation.is_file():
        scores = json.loads(evaluation.read_text())["deterministic"]["per_seed_mean"]
    elif len(history) > 1:
        scores = [np.nan if s is None else s for s in history[-1]["scores"]]
    best = 0 if scores is None or np.isnan(scores).all() else int(np.nanargmax(scores))
    member, schedule = best, []
    for event in reversed(history):
        values = {name: float(v[member]) for name, v in event["values"].items()}
        schedule.append((int(event["env_steps"]), values))
        if event.get("replaced", [False] * members)[member]:
            member = int(event["source"][member])
    return best, schedule[::-1]


class ScheduleReplay:
    """A plain run that follows the schedule a population's best member inherited.

    ``RunConfig.pbt_replay`` names the population run; from each step of the schedule
    (:func:`best_lineage`) on, every member of this run trains with that step's values of
    the explored fields, set at the first logging interval that ends there or later (at the
    step itself with the population's ``log_every``). Resumed, the run sets the values of
    its step again, so it goes on as one that never stopped.

    Args:
        run: The run that replays.
    """

    def __init__(self, run: Any) -> None:
        source = Path(run.run_config.pbt_replay)
        _, self.schedule = best_lineage(source)
        fields = sorted(self.schedule[0][1])
        config = run.config
        bounds = {name: (-math.inf, math.inf) for name in fields}
        hints = typing.get_type_hints(type(config))
        floats = [n for n in getattr(type(config), "SWEEPABLE", ()) if hints.get(n) is float]
        unknown = [n for n in fields if n not in floats]
        if unknown:
            raise ValueError(
                f"pbt_replay: {source}'s schedule sets {', '.join(unknown)}, which "
                f"{type(config).__name__} does not hold as data; replay it with the algorithm "
                "that trained the population."
            )
        self.members = config.member_configs()
        self.hyperparams = run.agent.hyperparams
        self.leaves = hyperparam_leaves(run.agent.hyperparams, config, bounds)
        self.program = make_exploit(
            run.agent.state_layout, run.agent.layout, type(run.agent.hyperparams(config))
        )
        self.applied: int | None = None

    def apply(self, state: Any, env_steps: int) -> Any:
        """The state with the values of the schedule's latest step at or before ``env_steps``."""
        index = max(i for i, (step, _) in enumerate(self.schedule) if step <= env_steps)
        if index == self.applied:
            return state
        self.applied = index
        count = len(self.members)
        values = {
            name: np.full(count, v, np.float64) for name, v in self.schedule[index][1].items()
        }
        leaves = leaf_values(self.hyperparams, self.members, self.leaves, values)
        identity = np.arange(count, dtype=np.int32)
        return self.program(state, identity, np.zeros(count, bool), leaves)
