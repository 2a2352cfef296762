"""Learning curves drawn from runs' ``metrics.csv``: one run's ``curve.png``, several overlaid.

Each run is drawn as the mean episode return over its seeds, with a band for their spread
where ``metrics.csv`` holds each seed's return (runs of several seeds since those columns
exist; older runs and single seeds draw the mean alone). A sweep's run is drawn as one curve
per grid point, over that point's seeds. The x axis is environment steps per
seed, or wall-clock training time: the seconds the training intervals took, summed, as
``metrics.csv`` records them (``steps_per_second``). Compilation (done before the first
interval), checkpoint writes and the pauses between the sessions of a resumed run are not
counted, so the time axis compares what the runs' training programs cost.
"""

from __future__ import annotations

import dataclasses
import io
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

from rollax import stats
from rollax.runs._run_dir import RunDirectory, write_atomic
from rollax.runs._sinks import seed_return_fields
from rollax.training import point_labels

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "BANDS",
    "STATS",
    "X_AXES",
    "draw_population",
    "draw_runs",
    "plot_curve",
    "plot_population",
    "plot_runs",
]

X_AXES = ("steps", "time")
"""What a curve is drawn against: environment steps per seed, or wall-clock training time."""
STATS = ("mean", "iqm")
"""The line over a curve's seeds: their mean, or their interquartile mean (the mean of the
middle half, robust to a seed stuck far from the others)."""
BANDS = ("std", "minmax", "ci", "none")
"""The band around each line: one standard deviation over the seeds either side, the lowest
to the highest seed, the statistic's 95% bootstrap confidence interval over the seeds, or
none."""
_BAND_NOTES = {
    "std": "band: ±1 std over seeds",
    "minmax": "band: min to max over seeds",
    "ci": "band: 95% bootstrap CI over seeds",
}
_CI_REPS = 2_000
"""Bootstrap resamples per point of a ``"ci"`` band."""


@dataclasses.dataclass(frozen=True)
class _Curve:
    """One run's learning curve as its ``metrics.csv`` records it, one entry per logged row.

    Attributes:
        directory: The run directory.
        algo: The algorithm's registered name (``""`` if the config does not say).
        env: The environment id.
        num_seeds: Seeds of the curve (of its grid point in a sweep).
        point: The sweep's grid point the curve draws (``"lr=1e-3 ent_coef=0"``), ``""``
            for a run without a sweep.
        env_steps: int64 ``(rows,)``: environment steps per seed at the end of each interval.
        seconds: float64 ``(rows,)``: wall-clock seconds the training intervals took, summed
            up to the end of each (compilation, checkpoints and pauses not counted).
        returns: float64 ``(rows, columns)``: the mean return of the episodes that ended in each
            interval, NaN where none did; one column per seed where the run recorded them,
            else one column, the mean over seeds.
    """

    directory: Path
    algo: str
    env: str
    num_seeds: int
    point: str
    env_steps: np.ndarray
    seconds: np.ndarray
    returns: np.ndarray

    @property
    def per_seed(self) -> bool:
        """Whether ``returns`` holds one column per seed (so a spread can be drawn)."""
        return self.returns.shape[1] > 1


def _number(text: str) -> float:
    return float(text) if text != "" else math.nan


def _run_directory(directory: str | Path | RunDirectory) -> RunDirectory:
    return directory if isinstance(directory, RunDirectory) else RunDirectory(Path(directory))


def _read_curves(run: RunDirectory) -> list[_Curve]:
    """The curves of the run in ``run``: one per grid point of a sweep, else one.

    None while no episode has ended.

    Raises:
        ValueError: not a run directory, or a ``metrics.csv`` without its columns.
    """
    directory = run.path
    if not directory.is_dir():
        what = "is not a directory" if directory.exists() else "does not exist"
        raise ValueError(f"RUN_DIR {str(directory)!r} {what}.")
    stored = run.read_config()
    algo = str(stored.get("algo", ""))
    section = stored.get("config", stored.get(algo, {}))  # older runs: under the algo's name
    num_seeds = section.get("num_seeds") if isinstance(section, dict) else None
    if not isinstance(num_seeds, int) or num_seeds < 1:
        raise ValueError(f"{run.config} does not say how many seeds the run trained (num_seeds).")
    sweep = section.get("sweep", [])
    labels = point_labels(sweep)
    # A run still training (or killed) may have written its last line in part: left out.
    columns, rows = run.read_metrics()
    if not columns:  # no metrics.csv yet, or one an earlier version's kill left empty
        return []
    needed = ("env_steps", "steps_per_second", "episode_return")
    missing = [c for c in needed if c not in columns]
    if missing:
        raise ValueError(f"{run.metrics} lacks the column(s) {', '.join(missing)}.")
    seeds = seed_return_fields(num_seeds, sweep)
    value_columns = list(seeds) if seeds and set(seeds) <= set(columns) else ["episode_return"]
    env_steps = np.array([int(r["env_steps"]) for r in rows], np.int64)
    intervals = np.diff(env_steps, prepend=0) * num_seeds * max(1, len(labels))
    rates = np.array([float(r["steps_per_second"]) for r in rows], np.float64)
    returns = np.array([[_number(r[c]) for c in value_columns] for r in rows], np.float64)
    if not np.isfinite(returns).any():
        return []
    # Members are consecutive per grid point: split the columns point by point.
    groups = np.split(returns, len(labels), axis=1) if len(value_columns) > 1 and labels else []
    return [
        _Curve(
            directory=directory,
            algo=algo,
            env=str(stored.get("env", "")),
            num_seeds=num_seeds,
            point=point,
            env_steps=env_steps,
            seconds=np.cumsum(intervals / rates),
            returns=values,
        )
        for point, values in (zip(labels, groups, strict=True) if groups else [("", returns)])
    ]


def _curves(run: RunDirectory) -> list[_Curve]:
    """:func:`_read_curves`, with an error where there is nothing to draw."""
    curves = _read_curves(run)
    if not curves:
        what = "has no metrics.csv" if not run.metrics.is_file() else "logged no finished episode"
        raise ValueError(
            f"RUN_DIR {str(run.path)!r} {what} yet: it has no learning curve to draw (a row "
            f"is logged every --log-every steps, with the return of the episodes that ended)."
        )
    return curves


def _smooth(values: np.ndarray, window: int) -> np.ndarray:
    """Trailing mean over ``window`` rows of the values present, per column.

    Args:
        values: float64 ``(rows, columns)``, NaN where there is no value.
        window: Rows averaged (1: unchanged).

    Returns:
        float64 ``(rows, columns)``: each row's mean of the values in it and the
        ``window - 1`` rows before; NaN where all of them are NaN.
    """
    if window == 1:
        return values
    present = ~np.isnan(values)
    zero = np.zeros((1, values.shape[1]))
    sums = np.concatenate([zero, np.cumsum(np.where(present, values, 0.0), axis=0)])
    counts = np.concatenate([zero, np.cumsum(present, axis=0)])
    end = np.arange(1, len(values) + 1)
    start = np.maximum(end - window, 0)
    total, count = sums[end] - sums[start], counts[end] - counts[start]
    return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def _over_seeds(
    values: np.ndarray, band: str, stat: str = "mean"
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each row's statistic over the columns present, and the band's edges (NaN under 2 values).

    Args:
        values: float64 ``(rows, seeds)``, NaN where a seed has no value.
        band: One of :data:`BANDS`.
        stat: One of :data:`STATS`.

    Returns:
        float64 ``(rows,)`` each: the statistic (NaN where no seed has a value), ``low``,
        ``high``.
    """
    present = ~np.isnan(values)
    count = present.sum(axis=1)
    filled = np.where(present, values, 0.0)
    mean = np.where(count > 0, filled.sum(axis=1) / np.maximum(count, 1), np.nan)
    line = mean
    if stat == "iqm":
        line = np.array([stats.iqm(row[ok]) if ok.any() else np.nan
                         for row, ok in zip(values, present, strict=True)])  # fmt: skip
    spread = count >= 2
    low = high = np.full_like(line, np.nan)
    if band == "std":
        variance = np.where(present, (values - mean[:, None]) ** 2, 0.0).sum(axis=1)
        std = np.sqrt(variance / np.maximum(count, 1))
        low, high = line - std, line + std
    elif band == "minmax":
        low = np.where(present, values, np.inf).min(axis=1)
        high = np.where(present, values, -np.inf).max(axis=1)
    elif band == "ci":
        statistic = None if stat == "iqm" else np.mean
        edges = [
            stats.interval(row[ok], statistic, reps=_CI_REPS, seed=i)[1:]
            if ok.sum() >= 2
            else (np.nan, np.nan)
            for i, (row, ok) in enumerate(zip(values, present, strict=True))
        ]
        low, high = np.array(edges, dtype=np.float64).reshape(-1, 2).T
    return line, np.where(spread, low, np.nan), np.where(spread, high, np.nan)


def _time_unit(seconds: float) -> tuple[str, float]:
    """The unit that reads best for a span of ``seconds``, and its length in seconds."""
    if seconds < 600:
        return "s", 1.0
    if seconds < 3 * 3600:
        return "min", 60.0
    return "h", 3600.0


def _labels(curves: Sequence[_Curve]) -> list[str]:
    """One legend entry per curve: its run's directory, algorithm, environment and seeds.

    A sweep's curve is named by its grid point (after the directory's name when several runs
    are drawn).
    """
    dirs = list(dict.fromkeys(c.directory for c in curves))
    names = {d: d.resolve().name for d in dirs}
    if len(set(names.values())) < len(dirs):  # same names in different places: the paths
        names = {d: str(d) for d in dirs}
    labels = []
    for c in curves:
        seeds = f"{c.num_seeds} seed{'s' * (c.num_seeds > 1)}"
        if not c.point:
            labels.append(f"{names[c.directory]} ({c.algo.upper()}, {c.env}, {seeds})")
        else:
            prefix = f"{names[c.directory]}: " if len(dirs) > 1 else ""
            labels.append(f"{prefix}{c.point} ({seeds})")
    return labels


def _title(curves: Sequence[_Curve]) -> str:
    algos = {c.algo.upper() for c in curves}
    envs = {c.env for c in curves}
    if len(envs) == 1 and len(algos) == 1:
        return f"{algos.pop()} on {envs.pop()}"
    if len(envs) == 1:
        return envs.pop()
    return f"{len({c.directory for c in curves})} runs"


def _draw(
    curves: Sequence[_Curve], x: str, smooth: int, band: str, title: str | None, stat: str
) -> Figure:
    """A figure of ``curves``: per run, a line (``stat``) and (with several seeds) a band."""
    from matplotlib.figure import Figure

    several = len(curves) > 1
    fig = Figure(figsize=(7.5, 4.5) if several else (6, 3.5), dpi=100, layout="constrained")
    ax = fig.add_subplot()
    unit, scale = _time_unit(max(float(c.seconds[-1]) for c in curves)) if x == "time" else ("", 1)
    banded = False
    for curve, label in zip(curves, _labels(curves), strict=True):
        xs = curve.env_steps if x == "steps" else curve.seconds / scale
        mean, low, high = _over_seeds(_smooth(curve.returns, smooth), band, stat)
        keep = ~np.isnan(mean)
        (line,) = ax.plot(xs[keep], mean[keep], label=label)
        if band != "none" and curve.per_seed:
            edges = ~np.isnan(low[keep])
            ax.fill_between(
                xs[keep],
                np.where(edges, low[keep], mean[keep]),
                np.where(edges, high[keep], mean[keep]),
                where=edges,
                color=line.get_color(),
                alpha=0.2,
                linewidth=0,
            )
            banded = True
    ax.set_xlabel(
        "environment steps per seed"
        if x == "steps"
        else f"wall-clock training time ({unit}; compilation excluded)"
    )
    ax.set_ylabel(f"episode return ({'IQM' if stat == 'iqm' else 'mean'} over seeds)")
    notes = [_BAND_NOTES[band]] if banded else []
    if smooth > 1:
        notes.append(f"trailing mean of {smooth} logging intervals")
    heading = title if title is not None else _title(curves)
    ax.set_title("\n".join([heading, "; ".join(notes)]) if notes else heading)
    ax.grid(alpha=0.3)
    if several:
        ax.legend(fontsize="small")
    return fig


def _save(fig: Figure, out: Path) -> Path:
    """Write ``fig`` to ``out`` atomically, in the format its suffix names."""
    data = io.BytesIO()
    fig.savefig(data, format=out.suffix[1:].lower())
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, data.getvalue())
    return out


def _check_options(x: str, smooth: int, band: str, stat: str = "mean") -> None:
    if stat not in STATS:
        raise ValueError(f"stat must be one of {', '.join(STATS)}, got {stat!r}.")
    if x not in X_AXES:
        raise ValueError(f"x must be one of {', '.join(X_AXES)}, got {x!r}.")
    if band not in BANDS:
        raise ValueError(f"band must be one of {', '.join(BANDS)}, got {band!r}.")
    if isinstance(smooth, bool) or not isinstance(smooth, int) or smooth < 1:
        raise ValueError(
            f"smooth must be a whole number of logging intervals >= 1 (1: none), got {smooth!r}."
        )


def draw_runs(
    run_dirs: Sequence[str | Path],
    *,
    x: Literal["steps", "time"] = "steps",
    smooth: int = 1,
    band: Literal["std", "minmax", "ci", "none"] | None = None,
    title: str | None = None,
    stat: Literal["mean", "iqm"] = "mean",
) -> Figure:
    """The learning curves of several runs overlaid in one matplotlib figure.

    Each run is a line: the mean (or interquartile mean) over its seeds of the return of the
    episodes that ended in each logging interval. Runs of several seeds get a band of the
    same colour for the spread across seeds (runs written before ``metrics.csv`` held each
    seed's return draw the mean alone). The legend names each run's directory, algorithm,
    environment and seeds.

    Args:
        run_dirs: Run directories (each with ``config.json`` and ``metrics.csv``).
        x: ``"steps"``: environment steps per seed; ``"time"``: wall-clock seconds the
            training intervals took, summed (compilation, checkpoint writes and pauses
            between the sessions of a resumed run not counted).
        smooth: Each point is the trailing mean of this many logging intervals (1: none),
            taken per seed before the mean and spread.
        band: ``"std"``: one standard deviation over the seeds either side of the line;
            ``"minmax"``: from the lowest seed to the highest; ``"ci"``: the statistic's 95%
            bootstrap confidence interval over the seeds (2,000 resamples a point);
            ``"none"``. ``None``: ``"std"`` for the mean, ``"ci"`` for the IQM.
        title: The figure's title; ``None``: the algorithm and environment the runs share.
        stat: ``"mean"`` or ``"iqm"``: the interquartile mean over the seeds (the mean of
            their middle half, see :func:`rollax.stats.iqm`).

    Returns:
        A ``matplotlib.figure.Figure`` (not registered with pyplot) with one axes.

    Raises:
        TypeError: ``run_dirs`` is a single path rather than a sequence of them.
        ValueError: no run directories, an unknown ``x``, ``band`` or ``stat``, a ``smooth``
            below 1, or a directory that is not a run or has no finished episode logged yet.

    Examples:
        >>> fig = draw_runs(["runs/ppo-a", "runs/ppo-b"], x="time", smooth=5)  # doctest: +SKIP
    """
    if isinstance(run_dirs, str | Path):
        raise TypeError(
            f"run_dirs must be a sequence of run directories, got the single path "
            f"{str(run_dirs)!r}; pass [{str(run_dirs)!r}]."
        )
    dirs = [Path(d) for d in run_dirs]
    if not dirs:
        raise ValueError("run_dirs is empty: give at least one run directory.")
    if band is None:
        band = "ci" if stat == "iqm" else "std"
    _check_options(x, smooth, band, stat)
    curves = [c for d in dirs for c in _curves(RunDirectory(d))]
    return _draw(curves, x, smooth, band, title, stat)


def plot_runs(
    run_dirs: Sequence[str | Path],
    out: str | Path = "curves.png",
    *,
    x: Literal["steps", "time"] = "steps",
    smooth: int = 1,
    band: Literal["std", "minmax", "ci", "none"] | None = None,
    title: str | None = None,
    stat: Literal["mean", "iqm"] = "mean",
) -> Path:
    """Draw the learning curves of several runs in one picture (:func:`draw_runs`) to ``out``.

    What ``rollax plot RUN_DIR... --out FILE`` runs. The file is written atomically (a
    temporary file, then a rename), in the format its suffix names (``.png``, ``.pdf``,
    ``.svg``, ...); missing parent directories are made.

    Args:
        run_dirs: Run directories.
        out: The picture's path.
        x: See :func:`draw_runs`.
        smooth: See :func:`draw_runs`.
        band: See :func:`draw_runs`.
        title: See :func:`draw_runs`.
        stat: See :func:`draw_runs`.

    Returns:
        ``out`` as a path.

    Raises:
        TypeError, ValueError: as :func:`draw_runs`, and an ``out`` whose suffix is no image
            format matplotlib writes.
    """
    from matplotlib.backend_bases import FigureCanvasBase

    path = Path(out)
    formats = FigureCanvasBase.get_supported_filetypes()
    if path.suffix[1:].lower() not in formats:
        raise ValueError(
            f"out {str(out)!r} must end in one of {', '.join('.' + f for f in formats)}."
        )
    figure = draw_runs(run_dirs, x=x, smooth=smooth, band=band, title=title, stat=stat)
    return _save(figure, path)


def plot_curve(directory: str | Path | RunDirectory) -> Path | None:
    """Draw the run's ``curve.png`` (:func:`draw_runs` of the run alone, against steps).

    Returns:
        The file, or ``None`` while ``metrics.csv`` holds no finished episode.
    """
    run = _run_directory(directory)
    curves = _read_curves(run)
    if not curves:
        return None
    figure = _draw(curves, "steps", 1, "std", None, "mean")
    return _save(figure, run.curve)


def draw_population(directory: str | Path | RunDirectory) -> Figure:
    """The hyperparameter schedules a population-based training run's members followed.

    One panel per explored field: each member's value against environment steps per seed,
    as ``population.jsonl`` records it, a dot where the member copied another (and took its
    value, perturbed), and the lineage of the member that scored best at the last step (or,
    with ``eval.json``, evaluated best) drawn bold: the schedule that emerged.

    Raises:
        ValueError: a directory whose run did not train a population.
    """
    from matplotlib.figure import Figure

    from rollax.runs._population import best_lineage

    run = _run_directory(directory)
    history = run.read_population()
    if not history:
        raise ValueError(
            f"{run.path} holds no {run.population.name}: its run did not train a population "
            "(rollax train ... --pbt-interval N --pbt-explore NAME=LOW,HIGH)."
        )
    steps = np.asarray([e["env_steps"] for e in history])
    names = sorted(history[0]["values"])
    best, schedule = best_lineage(run)
    fig = Figure(figsize=(7, 2.6 * len(names) + 0.6), dpi=100, layout="constrained")
    axes = fig.subplots(len(names), 1, sharex=True, squeeze=False)[:, 0]
    _, rows = run.read_metrics()  # the last env_steps of metrics.csv
    end = max(int(steps[-1]), int(rows[-1]["env_steps"]) if rows else 0)
    for ax, name in zip(axes, names, strict=True):
        values = np.asarray([e["values"][name] for e in history], np.float64)
        xs = np.append(steps, end)
        for m in range(values.shape[1]):
            ys = np.append(values[:, m], values[-1, m])
            ax.step(xs, ys, where="post", color="0.6", linewidth=0.8)
            copied = [k for k, e in enumerate(history) if e.get("replaced", [False] * (m + 1))[m]]
            ax.plot(steps[copied], values[copied, m], ".", color="0.35", markersize=4)
        lineage = np.asarray([v[name] for _, v in schedule], np.float64)
        at = np.append([s for s, _ in schedule], end)
        ax.step(at, np.append(lineage, lineage[-1]), where="post", color="C0", linewidth=2.2,
                label=f"member {best}'s lineage")  # fmt: skip
        low, high = values.min(), values.max()
        if low > 0 and high / low >= 10:
            ax.set_yscale("log")
        ax.set_ylabel(name)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize="small")
    axes[-1].set_xlabel("environment steps per seed")
    events = sum(e["event"] != "start" for e in history)
    axes[0].set_title(
        f"{run.path.name}: {values.shape[1]} members, {events} PBT steps (dots: copies)"
    )
    return fig


def plot_population(directory: str | Path | RunDirectory, out: str | Path | None = None) -> Path:
    """Draw :func:`draw_population` to ``out`` (default: the run's ``population.png``)."""
    run = _run_directory(directory)
    path = Path(out) if out is not None else run.population_plot
    return _save(draw_population(run), path)
