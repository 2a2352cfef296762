"""Statistics over runs: the interquartile mean, bootstrap intervals, improvement.

Final returns of many seeds are summarised the way the "Deep RL at the Edge of the
Statistical Precipice" paper asks (and its library, rliable, computes): the interquartile
mean (IQM, the mean of the middle 50% of the scores) with a percentile confidence interval
from a bootstrap that resamples runs within each task, and the probability that one
algorithm's run beats another's on a task, and the performance profile (the fraction of
runs above each of a set of thresholds). Scores are float arrays ``(runs, tasks)``; a 1-D
array is one task's runs.

With the same seed, :func:`interval` and :func:`performance_profile` draw the same
resamples as rliable's ``get_interval_estimates`` and ``create_performance_profile`` after
``np.random.seed(seed)``: the two agree up to float rounding.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["interval", "iqm", "performance_profile", "probability_of_improvement"]

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
    _check_bootstrap(reps, confidence)
    if statistic is None:
        values = _bootstrap(data, lambda r: _trimmed_means(r.reshape(len(r), -1)), reps, seed)
    else:
        values = _bootstrap(data, lambda r: np.array([statistic(x) for x in r]), reps, seed)
    estimate = iqm(data) if statistic is None else float(statistic(data))
    low, high = _percentiles(values, confidence)
    return estimate, float(low), float(high)


def performance_profile(
    scores: np.ndarray,
    thresholds: np.ndarray,
    *,
    reps: int = 2_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The fraction of runs scoring above each threshold, with stratified bootstrap intervals.

    The score distribution of rliable's ``create_performance_profile``: over all runs of
    all tasks, the fraction above each ``tau``; its interval from the same resamples as
    :func:`interval` draws for ``seed`` (every threshold on each resample).

    Args:
        scores: ``(runs,)`` or ``(runs, tasks)``.
        thresholds: ``(T,)`` returns (the ``tau`` of the profile).
        reps: Bootstrap resamples.
        confidence: The intervals' coverage, in (0, 1).
        seed: Seeds ``numpy.random.RandomState``, which draws the resamples.

    Returns:
        ``(fractions, low, high)``, each float64 ``(T,)``.

    Raises:
        ValueError: as :func:`interval`, or thresholds that are not a non-empty 1-D array.
    """
    data = _runs_by_tasks(scores, "scores")
    _check_bootstrap(reps, confidence)
    taus = np.asarray(thresholds, dtype=np.float64)
    if taus.ndim != 1 or taus.size == 0:
        raise ValueError(
            f"thresholds must be a non-empty 1-D array, got shape {np.shape(thresholds)}."
        )

    def above(resampled: np.ndarray) -> np.ndarray:
        flat = resampled.reshape(len(resampled), -1)
        return (flat[:, :, None] > taus).mean(axis=1)

    values = _bootstrap(data, above, reps, seed)
    low, high = _percentiles(values, confidence)
    return above(data[None])[0], low, high


def _check_bootstrap(reps: int, confidence: float) -> None:
    """Raise a ValueError naming ``reps`` or ``confidence`` where it is not valid."""
    if isinstance(reps, bool) or not isinstance(reps, int) or reps < 1:
        raise ValueError(f"reps must be a positive integer, got {reps!r}.")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}.")


def _bootstrap(
    data: np.ndarray, statistic: Callable[[np.ndarray], np.ndarray], reps: int, seed: int
) -> np.ndarray:
    """``statistic`` of ``reps`` stratified resamples of ``data`` (``(runs, tasks)``).

    Each resample draws, per task, ``runs`` of its runs with replacement, ``_CHUNK``
    resamples at a time from ``RandomState(seed)`` (rliable's draws for that seed).
    ``statistic`` maps resamples ``(count, runs, tasks)`` to ``(count,)`` or ``(count, k)``.
    """
    runs, tasks = data.shape
    rng = np.random.RandomState(seed)
    columns = np.arange(tasks)
    values = []
    for start in range(0, reps, _CHUNK):
        count = min(_CHUNK, reps - start)
        rows = rng.choice(runs, (count, runs, tasks), replace=True)
        values.append(statistic(data[rows, columns]))
    return np.concatenate(values)


def _percentiles(values: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """The bounds holding the middle ``confidence`` of ``values`` along its first axis."""
    alpha = (1.0 - confidence) / 2
    low, high = np.percentile(values, [100 * alpha, 100 * (1 - alpha)], axis=0)
    return low, high


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
