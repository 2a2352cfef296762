"""rollax.stats against rliable on fixed data, and its errors."""

import numpy as np
import pytest

from rollax import stats

# The comparisons with rliable (the `bench` extra); the tests of rollax alone run without it.
needs_rliable = pytest.mark.extra("rliable")

SHAPES = [(10, 1), (7, 3), (12, 2), (4, 1)]


@needs_rliable
@pytest.mark.parametrize("shape", SHAPES)
def test_iqm_and_its_interval_are_rliables(shape):
    from rliable import library as rly
    from rliable import metrics

    scores = np.random.default_rng(sum(shape)).normal(size=shape) * 10
    np.random.seed(5)  # noqa: NPY002 (rliable's resamples come from numpy's global generator)
    point, intervals = rly.get_interval_estimates(
        {"x": scores}, lambda s: np.array([metrics.aggregate_iqm(s)]), reps=2_000
    )
    estimate, low, high = stats.interval(scores, reps=2_000, seed=5)
    np.testing.assert_allclose(estimate, point["x"][0], rtol=0, atol=1e-12)
    np.testing.assert_allclose([low, high], intervals["x"][:, 0], rtol=0, atol=1e-12)
    assert low <= estimate <= high


@needs_rliable
def test_any_statistic_resamples_like_rliable():
    from rliable import library as rly

    scores = np.random.default_rng(0).exponential(size=(9, 2))
    np.random.seed(1)  # noqa: NPY002
    _, intervals = rly.get_interval_estimates(
        {"x": scores}, lambda s: np.array([np.median(s)]), reps=500
    )
    _, low, high = stats.interval(scores, np.median, reps=500, seed=1)
    np.testing.assert_allclose([low, high], intervals["x"][:, 0], rtol=0, atol=1e-12)


@needs_rliable
@pytest.mark.parametrize("shape", [((10, 1), (10, 1)), ((5, 3), (8, 3)), ((6,), (6,))])
def test_probability_of_improvement_is_rliables(shape):
    from rliable import metrics

    rng = np.random.default_rng(7)
    x = np.round(rng.normal(size=shape[0]), 1)  # rounded: ties count a half
    y = np.round(rng.normal(size=shape[1]), 1)
    mine = stats.probability_of_improvement(x, y)
    theirs = metrics.probability_of_improvement(x.reshape(len(x), -1), y.reshape(len(y), -1))
    assert mine == pytest.approx(theirs, abs=1e-12)
    assert stats.probability_of_improvement(x, x) == 0.5


@needs_rliable
@pytest.mark.parametrize("shape", [(10, 1), (6, 3)])
def test_performance_profile_is_rliables(shape):
    from rliable import library as rly

    scores = np.round(np.random.default_rng(3).normal(size=shape), 1)
    taus = np.linspace(-1.5, 1.5, 7)
    np.random.seed(2)  # noqa: NPY002
    profiles, intervals = rly.create_performance_profile({"x": scores}, taus, reps=1_000)
    fractions, low, high = stats.performance_profile(scores, taus, reps=1_000, seed=2)
    np.testing.assert_allclose(fractions, profiles["x"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.stack([low, high]), intervals["x"], rtol=0, atol=1e-12)
    assert np.all(np.diff(fractions) <= 0)  # a profile falls as the threshold rises


def test_iqm_by_hand():
    assert stats.iqm(np.arange(1.0, 9.0)) == 4.5  # the mean of 3, 4, 5, 6
    assert stats.iqm([1.0, 2.0, 3.0, 100.0]) == 2.5  # a quarter cut from each end


def test_bad_input_is_a_clear_error():
    with pytest.raises(ValueError, match=r"scores must be a non-empty array"):
        stats.iqm(np.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match=r"scores must be finite"):
        stats.interval([1.0, np.nan])
    with pytest.raises(ValueError, match=r"reps must be a positive integer, got 0"):
        stats.interval([1.0, 2.0], reps=0)
    with pytest.raises(ValueError, match=r"confidence must lie in \(0, 1\), got 95"):
        stats.interval([1.0, 2.0], confidence=95)
    with pytest.raises(ValueError, match=r"thresholds must be a non-empty 1-D array"):
        stats.performance_profile([1.0, 2.0], [])
    with pytest.raises(ValueError, match=r"same tasks, got 2 and 3 columns"):
        stats.probability_of_improvement(np.zeros((4, 2)), np.zeros((4, 3)))
