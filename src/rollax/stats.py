"""Statistics over runs: the interquartile mean, bootstrap intervals, improvement.

Final returns of many seeds are summarised the way the "Deep RL at the Edge of the
Statistical Precipice" paper asks (and its library, rliable, computes): the interquartile
mean (IQM, the mean of the middle 50% of the scores) with a percentile confidence interval
from a bootstrap that resamples runs within each task, and the probability that one
algorithm's run beats another's on a task. Scores are float arrays ``(runs, tasks)``; a 1-D
array is one task's runs.

With the same seed, :func:`interval` draws the same resamples as rliable's
``get_interval_estimates`` after ``np.random.seed(seed)``: the two agree up to float
rounding.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["interval", "iqm", "probability_of_improvement"]

_CHUNK = 4096
"""Bootstrap resamples drawn and reduced at once (bounds the memory to about
``_CHUNK * runs * tasks`` indices)."""


def _runs_by_tasks(scores: np.ndarray, name: str) -> np.ndarray:
    """``scores`` as float64 ``(runs, tasks)``, checked."""
    array = np.asarray(scores, dtype=np.float64)
    if array.ndim == 1:
        array = array[:, None]
    if array.ndim != 2 or array.shape[0] < 1 or array.shape[1] < 1:
        raise ValueError(
            f"{name} must be a non-empty array (runs,) or (runs, tasks), got shape "
            f"{np.shape(scores)}."
        )
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be finite, got {array[~np.isfinite(array)][:3]}.")
    return array


def iqm(scores: np.ndarray) -> float:
    """The interquartile mean of every score: a quarter cut from each end, then the mean.

    The same as ``scipy.stats.trim_mean(scores, 0.25, axis=None)``.

    Args:
        scores: ``(runs,)`` or ``(runs, tasks)``.
    """
    return float(_trimmed_means(_runs_by_tasks(scores, "scores").reshape(1, -1))[0])


def _trimmed_means(rows: np.ndarray) -> np.ndarray:
    """Each row's 25%-trimmed mean: float64 ``(R,)`` of ``(R, n)``."""
    n = rows.shape[1]
    cut = int(0.25 * n)
    return np.sort(rows, axis=1)[:, cut : n - cut].mean(axis=1)


def interval(
    scores: np.ndarray,
    statistic: Callable[[np.ndarray], float] | None = None,
    *,
    reps: int = 50_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, float]:
    """A statistic of ``scores`` and its stratified bootstrap percentile interval.

    Each resample draws, for every task, as many runs as it has with replacement from that
    task's runs; the interval holds the middle ``confidence`` of the statistic over
    ``reps`` resamples.

    Args:
        scores: ``(runs,)`` or ``(runs, tasks)``.
        statistic: ``(runs, tasks) -> float``; ``None``: the IQM (computed for all
            resamples at once).
        reps: Bootstrap resamples.
        confidence: The interval's coverage, in (0, 1).
        seed: Seeds ``numpy.random.RandomState``, which draws the resamples.

    Returns:
        ``(estimate, low, high)``.

    Raises:
        ValueError: scores that are empty or not finite, ``reps < 1``, or a
            ``confidence`` outside (0, 1).
    """
    data = _runs_by_tasks(scores, "scores")
    if isinstance(reps, bool) or not isinstance(reps, int) or reps < 1:
        raise ValueError(f"reps must be a positive integer, got {reps!r}.")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}.")
    runs, tasks = data.shape
    rng = np.random.RandomState(seed)
    columns = np.arange(tasks)
    values = np.empty(reps)
    for start in range(0, reps, _CHUNK):
        count = min(_CHUNK, reps - start)
        rows = rng.choice(runs, (count, runs, tasks), replace=True)
        resampled = data[rows, columns]  # (count, runs, tasks)
        if statistic is None:
            values[start : start + count] = _trimmed_means(resampled.reshape(count, -1))
        else:
            values[start : start + count] = [statistic(r) for r in resampled]
    estimate = iqm(data) if statistic is None else float(statistic(data))
    alpha = (1.0 - confidence) / 2
    low, high = np.percentile(values, [100 * alpha, 100 * (1 - alpha)])
    return estimate, float(low), float(high)


def probability_of_improvement(scores_x: np.ndarray, scores_y: np.ndarray) -> float:
    """The probability that a run of X scores above a run of Y on a task, averaged over tasks.

    A tie counts a half: per task, the Mann-Whitney U statistic over ``runs_x * runs_y``.

    Args:
        scores_x: ``(runs_x,)`` or ``(runs_x, tasks)``.
        scores_y: ``(runs_y,)`` or ``(runs_y, tasks)``, the same tasks.

    Raises:
        ValueError: empty or non-finite scores, or different task counts.
    """
    x = _runs_by_tasks(scores_x, "scores_x")
    y = _runs_by_tasks(scores_y, "scores_y")
    if x.shape[1] != y.shape[1]:
        raise ValueError(
            f"scores_x and scores_y must hold the same tasks, got {x.shape[1]} and "
            f"{y.shape[1]} columns."
        )
    greater = (x[:, None, :] > y[None, :, :]).mean(axis=(0, 1))
    ties = (x[:, None, :] == y[None, :, :]).mean(axis=(0, 1))
    return float(np.mean(greater + 0.5 * ties))
