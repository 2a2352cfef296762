"""The loop that trains a run: chunks of ``agent.run``, metrics, checkpoints and stops.

It trains in chunks of ``log_every`` steps. After each chunk it writes a metrics row, then a
checkpoint when one is due. Four things end a run early:

- SIGTERM or SIGINT (preemption, Ctrl-C): a checkpoint is saved and the process exits with
  status ``128 + signal``; ``rollax resume`` continues bit for bit. In a multi-process run a
  signal to any process stops them all at the same step: after each chunk the processes
  agree through a collective whether any of them was asked to stop.
- A non-finite loss or parameter (:class:`TrainingDiverged`): the state that diverged is
  never saved, so no bad checkpoint can push a good one out; the last finite state is saved
  instead (if it was not already) and the run stops with a message.
- A kill: at most the work since the last checkpoint is lost. Every file is left whole or
  absent (checkpoints too: Orbax writes each under a temporary name and renames it when
  complete), except the last ``metrics.csv`` row or TensorBoard event, which a kill can cut
  short and every reader leaves out; ``rollax resume`` drops that row, and the rows and
  events past the checkpoint it continues from.
- A callback that asks to stop (returns ``False``): a checkpoint is saved and the run ends
  without its final evaluation; ``rollax resume`` (or :func:`rollax.runs.resume` with
  the same callback) continues it.

A callback (``train(..., callback=f)``) is called after every chunk, once its metrics row is
written and before a checkpoint that is due: ``f(run, row)`` with the :class:`Run` and the
row. It may replace ``run.state`` by a state of the same structure, shapes and dtypes (new
environment params, new per-seed hyperparameters: data, so nothing compiles again); the
checkpoint written after it holds the change, so a resumed run goes on exactly as one that
never stopped, as long as the callback decides from the state (``run.env_steps``, ...)
rather than from its own memory.
"""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import jax
import numpy as np

from rollax.runs._distributed import agree_any
from rollax.runs._pbt import PBTConfig
from rollax.runs._plots import plot_curve, plot_population
from rollax.runs._population import Population, ScheduleReplay
from rollax.runs._progress import Progress
from rollax.runs._run_dir import is_writer
from rollax.runs._run_state import Run, evaluate_state
from rollax.runs._sinks import RunSinks, seed_return_fields
from rollax.runs._trackers import open_trackers
from rollax.training import point_labels

__all__ = ["Callback", "TrainingDiverged", "intervals", "train_loop"]

Callback = Callable[[Run, dict[str, Any]], Any]
"""``callback(run, row)``, called between chunks; returning ``False`` stops the run."""


class TrainingDiverged(RuntimeError):
    """A loss or a parameter stopped being finite; the run stopped at its last good state."""


def _round_up(steps: int, unit: int) -> int:
    return max(unit, -(-steps // unit) * unit)


def intervals(rc: Any, total: int, unit: int, announce: bool = False) -> tuple[int, int]:
    """``(log_every, checkpoint_every)`` in environment steps per seed, as a run uses them.

    Metrics are logged after whole iterations of ``unit`` steps, and checkpoints written
    after whole logging intervals, so ``rc.log_every`` is rounded up to a multiple of
    ``unit`` and ``rc.checkpoint_every`` to a multiple of the logging interval
    (``checkpoint_every`` 0: none by steps). With ``announce``, a rounded value that was asked
    for is said on stderr.
    """
    log_every = _round_up(rc.log_every or total // 100, unit)
    ckpt_every = _round_up(rc.checkpoint_every, log_every) if rc.checkpoint_every else 0
    if announce and rc.log_every and log_every != rc.log_every:
        print(f"rollax: logging every {log_every:,} steps (--log-every {rc.log_every:,} "
              f"rounded up to whole iterations of {unit:,} steps).", file=sys.stderr)  # fmt: skip
    if announce and rc.checkpoint_every and ckpt_every != rc.checkpoint_every:
        print(f"rollax: checkpoints every {ckpt_every:,} steps (--checkpoint-every "
              f"{rc.checkpoint_every:,} rounded up to whole logging intervals of "
              f"{log_every:,} steps).", file=sys.stderr)  # fmt: skip
    return log_every, ckpt_every


@contextlib.contextmanager
def _stop_requests() -> Iterator[list[int]]:
    """Record SIGTERM and SIGINT instead of dying mid-step; restore the handlers after."""
    received: list[int] = []

    def handler(signum: int, frame: Any) -> None:
        received.append(signum)

    previous = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield received
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def train_loop(run: Run, callback: Callback | None = None) -> None:
    """Train until the budget is spent, logging and checkpointing; stop on signals.

    Args:
        run: The run, trained in place (``run.state``).
        callback: Called after each chunk (see the module's docstring); ``None``: none.

    Raises:
        TrainingDiverged: a non-finite loss or parameter (after saving the last good state).
        SystemExit: ``128 + signal`` after SIGTERM or SIGINT (after saving a checkpoint).
    """
    agent, rc = run.agent, run.run_config
    total = run.config.total_steps
    # matplotlib (half a second) imports while the run trains, not when it first draws; the
    # drawing itself stays in this thread, so the run's writes keep their order.
    threading.Thread(target=_import_matplotlib, name="rollax-matplotlib", daemon=True).start()
    every = intervals(rc, total, agent.steps_per_iteration, announce=is_writer())
    sinks = RunSinks.open(run)
    progress = Progress(
        run.algorithm.name.upper(), total, run.env_steps, rc.progress and is_writer()
    )
    last_ckpt = run.env_steps
    if agent.num_seeds > 1 and is_writer():
        print(f"rollax: training {_members(run)} on {_devices(agent.layout)}.", file=sys.stderr)
    try:
        sinks.trackers = open_trackers(run.directory, rc, run.config_json())  # --wandb, --mlflow
        chunks = _Chunks.start(run, callback, sinks, progress, every, last_ckpt)
        with _stop_requests() as stops:
            stopping, asked = chunks.train(stops)
            if run.checkpoints.latest_step() != run.env_steps:
                _checkpoint(run, sinks.trackers)
            if rc.eval_episodes and not stopping:
                # Inside the signal handlers: a signal now ends the run after the evaluation.
                _final_evaluation(run, sinks, rc.eval_episodes)
            if stopping:
                _say_stopped(run, progress, stops, asked)  # raises SystemExit after a signal
                return  # the callback stopped the run: a normal end, without the evaluation
    finally:
        progress.close()
        sinks.close()
    print(f"Run directory: {run.directory.path}", file=sys.stderr)


@dataclasses.dataclass
class _Chunks:
    """The loop over chunks of ``log_every`` steps, and what it keeps between them."""

    run: Run
    callback: Callback | None
    sinks: RunSinks
    progress: Progress
    total: int
    """The budget: environment steps per seed."""
    log_every: int
    ckpt_every: int
    """Environment steps per seed between checkpoints; 0: none by steps."""
    last_ckpt: int
    """The environment steps of the last checkpoint written (or of the start)."""
    cadence: _Cadence
    """When checkpoints fall due by time, and when ``curve.png`` is redrawn."""
    population: Population | None
    """Population-based training's members (``--pbt-interval``); ``None`` without it."""
    replay: ScheduleReplay | None
    """Another run's best schedule, replayed (``--pbt-replay``); ``None`` without it."""
    recent: float | None = None
    """The mean return of the episodes that ended in the latest chunk where any did."""

    @classmethod
    def start(
        cls,
        run: Run,
        callback: Callback | None,
        sinks: RunSinks,
        progress: Progress,
        every: tuple[int, int],
        last_ckpt: int,
    ) -> _Chunks:
        """Set up the population or the schedule replay (applied to the state at once)."""
        rc = run.run_config
        population = Population(run) if PBTConfig.from_run_config(rc).enabled else None
        replay = ScheduleReplay(run) if rc.pbt_replay else None
        if replay is not None:
            run.state = replay.apply(run.state, run.env_steps)
        total = run.config.total_steps
        log_every, ckpt_every = every
        return cls(
            run=run,
            callback=callback,
            sinks=sinks,
            progress=progress,
            total=total,
            log_every=log_every,
            ckpt_every=ckpt_every,
            last_ckpt=last_ckpt,
            cadence=_Cadence(60 * float(rc.checkpoint_minutes)),
            population=population,
            replay=replay,
        )

    def train(self, stops: list[int]) -> tuple[bool, bool]:
        """Train chunks until the budget is spent or the processes agree to stop.

        Args:
            stops: The signals received so far (:func:`_stop_requests`).

        Returns:
            ``(stopping, asked)``: whether the loop stopped early, and whether this process's
            callback asked it to.
        """
        stopping = asked = False
        while self.run.env_steps < self.total and not stopping:
            row = self.step()
            asked = self.callback is not None and _call_back(self.callback, self.run, row) is False
            stopping = agree_any(bool(stops) or asked)  # every process stops at one step
            if stopping:
                break
            self.checkpoint_if_due()
        return stopping, asked

    def step(self) -> dict[str, Any]:
        """Train one chunk and write its row; handle divergence, the population and replay."""
        run = self.run
        chunk = min(self.log_every, self.total - run.env_steps)
        start = time.perf_counter()
        previous = run.state
        run.state, metrics = run.agent.run(run.state, chunk)
        metrics = jax.device_get(metrics)
        seconds = time.perf_counter() - start
        row = self.write(metrics, seconds, chunk)
        if self.population is not None:
            self.population.observe(row)
        self.stop_if_diverged(previous, metrics)
        self.evolve(metrics)
        if self.replay is not None:
            run.state = self.replay.apply(run.state, run.env_steps)
        self.progress.update(run.env_steps, row["steps_per_second"], self.recent)
        return row

    def write(self, metrics: dict, seconds: float, chunk: int) -> dict[str, Any]:
        """The chunk's metrics row, written to every sink; ``recent`` follows its return."""
        episodes = np.asarray(metrics["episodes"])
        interval: float | None = None  # mean return of episodes ended in this chunk
        if episodes.sum() > 0:
            returns = np.asarray(metrics["episode_return"])
            interval = self.recent = float(returns[episodes > 0].mean())
        row = _row(self.run, metrics, seconds, chunk, interval)
        self.sinks.write(self.run, row, metrics)
        return row

    def stop_if_diverged(self, previous: Any, metrics: dict) -> None:
        """Stop the run on a non-finite value, unless a population can replace who diverged.

        Without a population any member diverging stops it; with one, all of them must.

        Raises:
            TrainingDiverged: after saving ``previous``, the last finite state.
        """
        finite = np.asarray(metrics["finite"])
        if not finite.all() and (self.population is None or not finite.any()):
            self.progress.close()
            _stop_diverged(self.run, previous, metrics)

    def evolve(self, metrics: dict) -> None:
        """The population's step: diverged members are replaced at once, others when due."""
        if self.population is None:
            return
        run, finite = self.run, np.asarray(metrics["finite"])
        if not finite.all() or (
            self.population.due(run.env_steps) and run.env_steps < self.total
        ):  # a diverged member is replaced at once; none copies at the very end
            run.state, event = self.population.step(run.state, run.env_steps, finite)
            if event is not None and event["event"] == "diverged" and is_writer():
                _say_replaced(run, event)

    def checkpoint_if_due(self) -> None:
        """Write a checkpoint when one is due by steps or by time, but not at the end.

        Due: ``ckpt_every`` steps or ``checkpoint_minutes`` after the last one, whichever
        comes first (the loop writes the last one). Every process decides alike (a
        collective): a multi-process run saves together.
        """
        run = self.run
        by_steps = bool(self.ckpt_every) and run.env_steps - self.last_ckpt >= self.ckpt_every
        # Steps are alike in every process, clocks are not: only a cadence by time asks
        # the others (the same config everywhere, so every process calls the collective).
        by_time = bool(self.cadence.checkpoint_seconds) and agree_any(self.cadence.checkpoint_due())
        due = by_steps or by_time
        if due and run.env_steps < self.total:
            _checkpoint(run, self.sinks.trackers, draw=self.cadence.draw_due())
            self.cadence.saved()
            self.last_ckpt = run.env_steps


@dataclasses.dataclass
class _Cadence:
    """The clock of a run's checkpoints by time and of its curve's redrawing.

    A checkpoint falls due ``checkpoint_seconds`` after the last one (or the start); a
    checkpoint redraws ``curve.png`` only when the last drawing is :data:`REDRAW_SECONDS`
    old (the last checkpoint of a run always draws it).
    """

    checkpoint_seconds: float
    """Seconds between checkpoints by time; 0: none by time."""
    last_save: float = dataclasses.field(default_factory=time.monotonic)
    last_draw: float | None = None

    REDRAW_SECONDS: ClassVar[float] = 60.0
    """Seconds between two drawings of ``curve.png`` while a run trains."""

    def checkpoint_due(self) -> bool:
        """Whether ``checkpoint_seconds`` passed since the last checkpoint (or the start)."""
        seconds = self.checkpoint_seconds
        return bool(seconds) and time.monotonic() - self.last_save >= seconds

    def draw_due(self) -> bool:
        """Whether a checkpoint now redraws the curve (and sends it to the trackers)."""
        now = time.monotonic()
        if self.last_draw is not None and now - self.last_draw < self.REDRAW_SECONDS:
            return False
        self.last_draw = now
        return True

    def saved(self) -> None:
        """A checkpoint was written: the time to the next one starts now."""
        self.last_save = time.monotonic()


def _final_evaluation(run: Run, sinks: RunSinks, episodes: int) -> None:
    """Evaluate the trained state: write it, log its returns and say them on stderr."""
    result = evaluate_state(run, episodes)
    run.directory.write_evaluation(result)
    final_returns = {
        f"eval/{name}_return": result[name]["mean"] for name in ("deterministic", "stochastic")
    }
    sinks.scalars(final_returns, run.env_steps)
    print(
        f"Trained {run.env_steps} steps per seed; final return over "
        f"{episodes} episodes per seed: "
        f"{result['deterministic']['mean']:.4g} (deterministic), "
        f"{result['stochastic']['mean']:.4g} (stochastic).",
        file=sys.stderr,
    )
    for point in result.get("points", ()):
        print(
            f"  {point['point']}: {point['deterministic']:.4g} (deterministic), "
            f"{point['stochastic']:.4g} (stochastic)",
            file=sys.stderr,
        )


def _say_stopped(run: Run, progress: Progress, stops: list[int], asked: bool) -> None:
    """Say where the stopped run's checkpoint is and how to continue it.

    Returns when this process's callback asked to stop (and no signal came); otherwise a
    signal stopped it, here or in another process.

    Raises:
        SystemExit: ``128 + signal`` (SIGTERM for another process's signal).
    """
    path = run.directory.path
    if not stops and asked:
        progress.close()
        print(
            f"The callback stopped the run at step {run.env_steps}: saved a checkpoint "
            f"in {path}; continue with `rollax resume {path}`.",
            file=sys.stderr,
        )
        return
    progress.close()
    signum = stops[0] if stops else signal.SIGTERM  # another process's signal
    name = signal.Signals(signum).name
    here = "received" if stops else "received by another process"
    print(
        f"{name} {here}: saved a checkpoint at step {run.env_steps} in "
        f"{path}; continue with `rollax resume {path}`.",
        file=sys.stderr,
    )
    raise SystemExit(128 + signum)


def _say_replaced(run: Run, event: dict[str, Any]) -> None:
    """Say which diverged members took copies of which (the population trains on)."""
    labels = _member_labels(run)
    copies = ", ".join(
        f"{labels[m]} <- {labels[s]}"
        for m, (s, r) in enumerate(zip(event["source"], event["replaced"], strict=True))
        if r
    )
    print(
        f"rollax: at step {event['env_steps']}, member(s) reached non-finite values and "
        f"took a copy of a finite member ({copies}; {run.directory.population}); the "
        "population trains on.",
        file=sys.stderr,
    )


def _member_labels(run: Run) -> list[str]:
    """Each member's name: its seed, or its grid point and seed."""
    if point_labels(run.config.sweep):
        fields = seed_return_fields(run.config.num_seeds, run.config.sweep)
        return [f.removeprefix("episode_return") for f in fields]
    return [f"seed {i}" for i in range(run.agent.num_seeds)]


def _members(run: Run) -> str:
    """``"12 members (6 grid points x 2 seeds)"``, or ``"2 seeds"``."""
    points = len(point_labels(run.config.sweep))
    seeds = int(run.config.num_seeds)
    if not points:
        return f"{seeds} seeds"
    return f"{points * seeds} members ({points} grid points x {seeds} seed{'s' * (seeds > 1)})"


def _devices(layout: Any) -> str:
    """``"2 cpu devices (members split over 2, shards over 1)"``, or ``"1 device"``."""
    if layout.mesh is None:
        return "1 device"
    kinds = "/".join(sorted({d.platform for d in layout.mesh.devices.flat}))
    return (
        f"{layout.mesh.devices.size} {kinds} devices (the seed axis over {layout.seed_devices}, "
        f"each seed's shards over {layout.data_devices})"
    )


def _call_back(callback: Callback, run: Run, row: dict[str, Any]) -> Any:
    """Call ``callback(run, row)``; refuse a state it changed in structure, shape or dtype."""
    before = jax.eval_shape(lambda: run.state)
    answer = callback(run, dict(row))
    after = jax.eval_shape(lambda: run.state)
    if jax.tree.structure(before) != jax.tree.structure(after) or any(
        (a.shape, a.dtype) != (b.shape, b.dtype)
        for a, b in zip(jax.tree.leaves(before), jax.tree.leaves(after), strict=True)
    ):
        raise ValueError(
            f"The callback {getattr(callback, '__name__', callback)!r} changed the training "
            "state's structure, shapes or dtypes; it may only change values (environment "
            "params, per-seed hyperparameters), with .replace() and arrays of the same shape "
            "and dtype."
        )
    return answer


def _stop_diverged(run: Run, previous: Any, metrics: dict) -> None:
    """Keep the last finite state as a checkpoint, then raise :class:`TrainingDiverged`."""
    bad_steps = run.env_steps
    run.state = previous
    seeds = [int(i) for i in np.flatnonzero(~np.asarray(metrics["finite"]))]
    labels = seed_return_fields(run.config.num_seeds, run.config.sweep)
    which = (
        ", ".join(labels[i].removeprefix("episode_return") for i in seeds)
        if point_labels(run.config.sweep)
        else str(seeds)
    )
    losses = [
        f"{k}={float(np.asarray(metrics[k])[seeds[0]]):.4g}"
        for k in run.agent.metric_names
        if not np.isfinite(np.asarray(metrics[k])[seeds[0]])
    ]
    what = ", ".join(losses) if losses else "parameters"
    if run.env_steps and run.checkpoints.latest_step() != run.env_steps:
        _checkpoint(run)
    kept = run.checkpoints.latest_step()
    where = (
        f"its last good checkpoint is step {kept} in {run.directory.checkpoints}"
        if kept is not None
        else "no checkpoint had been written yet"
    )
    raise TrainingDiverged(
        f"Training diverged between environment steps {run.env_steps} and {bad_steps}: "
        f"{'member' if point_labels(run.config.sweep) else 'seed'}(s) {which} reached non-finite "
        f"values ({what}). The run stopped; the diverged state was "
        f"not saved, and {where}. Resuming repeats the same computation: start a new run with "
        f"a smaller learning rate (or larger gradient clipping, fewer epochs)."
    )


def _row(run: Run, metrics: dict, seconds: float, chunk: int, returns: float | None) -> dict:
    """A metrics.csv row; a return is empty when no episode ended in the chunk (for that seed)."""
    row: dict[str, Any] = {
        "env_steps": run.env_steps,
        "updates": int(run.state.updates),
        "wall_time": f"{time.time():.3f}",
        "steps_per_second": round(chunk * run.agent.num_seeds / max(seconds, 1e-9), 1),
        "episode_return": "" if returns is None else f"{returns:.4f}",
        "episodes": int(np.asarray(metrics["episodes"]).sum()),
    }
    for name in run.agent.metric_names:
        row[name] = f"{float(np.mean(metrics[name])):.6g}"
    ended, per_seed = np.asarray(metrics["episodes"]), np.asarray(metrics["episode_return"])
    for seed, name in enumerate(seed_return_fields(run.config.num_seeds, run.config.sweep)):
        row[name] = f"{float(per_seed[seed]):.4f}" if ended[seed] > 0 else ""
    return row


def _import_matplotlib() -> None:
    """Import what drawing ``curve.png`` needs."""
    import matplotlib.backends.backend_agg
    import matplotlib.figure  # noqa: F401


def _checkpoint(run: Run, trackers: list = (), draw: bool = True) -> None:
    """Save a checkpoint; with ``draw``, redraw the pictures and send them on.

    The pictures: ``curve.png``, and a population's schedules.
    """
    run.checkpoints.save(run.env_steps, run.agent.to_checkpoint(run.state), run.config_json())
    if not draw:
        return
    plot_curve(run.directory)
    pictures = [run.directory.curve]
    if run.directory.holds_population() and is_writer():  # the schedules so far
        pictures.append(plot_population(run.directory))
    for tracker in trackers:
        for picture in pictures:
            tracker.upload(picture)
