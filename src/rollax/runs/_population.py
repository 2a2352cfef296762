"""A population-based training run on disk: its history, its steps between chunks, replays.

The pieces (who copies whom, what explores, the compiled copy) are :mod:`rollax.runs._pbt`;
this module applies them to a :class:`~rollax.runs.Run`, whose run directory keeps its
history (``population.jsonl``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from rollax.runs._pbt import (
    PBTConfig,
    choose_sources,
    evolvable_fields,
    explore_values,
    hyperparam_leaves,
    leaf_values,
    make_exploit,
)
from rollax.runs._run_dir import RunDirectory
from rollax.runs._sinks import seed_return_fields

__all__ = ["Population", "ScheduleReplay", "best_lineage", "check_population"]


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
        self.directory: RunDirectory = run.directory
        # Resumed: the events past the checkpoint were dropped (resume truncates the history).
        history = [e for e in self.directory.read_population() if e["env_steps"] <= run.env_steps]
        if history:
            last = history[-1]
            self.values = {k: np.asarray(v, np.float64) for k, v in last["values"].items()}
            self.last_step = int(last["env_steps"])
        else:
            self.values = {
                name: np.asarray([getattr(m, name) for m in self.members], np.float64)
                for name in self.bounds
            }
            self.last_step = run.env_steps
            self._record({"env_steps": run.env_steps, "event": "start", **self._values()})
        _, rows = self.directory.read_metrics()
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
        self.directory.append_population(event)

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


def best_lineage(
    directory: str | Path | RunDirectory,
) -> tuple[int, list[tuple[int, dict[str, float]]]]:
    """The best member of a population run, and the schedule its lineage followed.

    The best member is the one whose final evaluation (``eval.json``, deterministic policy)
    is highest, or without one the highest scorer at the last step. Its lineage follows it
    back through the members it copied; the schedule is the explored values that lineage
    held from each step of the history on: ``[(env_steps, {name: value}), ...]``, from 0.

    Raises:
        ValueError: a directory without a population history.
    """
    run = directory if isinstance(directory, RunDirectory) else RunDirectory(Path(directory))
    history = run.read_population()
    if not history:
        raise ValueError(
            f"{run.path} holds no {run.population.name}: its run did not train a population."
        )
    members = len(next(iter(history[0]["values"].values())))
    evaluation = run.read_evaluation()
    scores = None
    if evaluation is not None:
        scores = evaluation["deterministic"]["per_seed_mean"]
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
        source = RunDirectory(Path(run.run_config.pbt_replay))
        _, self.schedule = best_lineage(source)
        fields = sorted(self.schedule[0][1])
        config = run.config
        bounds = {name: (-math.inf, math.inf) for name in fields}
        unknown = [n for n in fields if n not in evolvable_fields(type(config))]
        if unknown:
            raise ValueError(
                f"pbt_replay: {source.path}'s schedule sets {', '.join(unknown)}, which "
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
