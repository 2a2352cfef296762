"""Learning curves from run directories: the figure, its statistics, and what is refused.

Run directories here are written in the format training writes (``tests/test_cli.py`` trains
real ones and plots them from the command line); known numbers make the statistics checkable.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import imageio.v3 as iio
import numpy as np
import pytest

from rollax import stats
from rollax.runs import draw_runs, plot_curve, plot_runs
from rollax.runs._run_dir import RunDirectory
from rollax.runs._sinks import seed_return_fields

FIELDS = ("env_steps", "updates", "wall_time", "steps_per_second", "episode_return", "episodes")


def write_run(
    path: Path, per_seed: list[list[float | None]] | None, *, seeds: int = 2, mean_only=None
) -> Path:
    """A run directory whose rows come every 100 steps at 1,000 steps/s over all seeds.

    ``per_seed[row][seed]``: each seed's return (``None``: no episode ended); ``mean_only``
    instead: a run from before per-seed columns, with these means.
    """
    path.mkdir(parents=True)
    config = {"algo": "ppo", "env": "CartPole-v1", "config": {"num_seeds": seeds}, "run": {}}
    (path / "config.json").write_text(json.dumps(config))
    columns = FIELDS + (seed_return_fields(seeds) if per_seed is not None else ())
    with (path / "metrics.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(columns)
        for i, means in enumerate(per_seed if per_seed is not None else mean_only):
            if per_seed is not None:
                present = [v for v in means if v is not None]
                mean = np.mean(present) if present else None
                cells = ["" if v is None else f"{v:.4f}" for v in means]
            else:
                mean, cells = means, []
            shown = "" if mean is None else f"{mean:.4f}"
            writer.writerow([100 * (i + 1), i, 0, 1000.0, shown, 1, *cells])
    return path


def axes_of(fig):
    (ax,) = fig.axes
    return ax


def band_edges(collection) -> list[float]:
    """The distinct heights of a band's outline."""
    return sorted({round(float(y), 6) for p in collection.get_paths() for _, y in p.vertices})


def test_each_run_is_a_mean_line_with_a_band_of_its_seeds_spread(tmp_path):
    a = write_run(tmp_path / "a", [[0, 3, 6], [None, 2, 6], [5, None, None], [None] * 3], seeds=3)
    b = write_run(tmp_path / "b", [[0, 0], [1, 1], [2, 2], [3, 3], [4, 4]])
    ax = axes_of(draw_runs([a, b]))
    assert len(ax.lines) == 2 and len(ax.collections) == 2
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "a (PPO, CartPole-v1, 3 seeds)",
        "b (PPO, CartPole-v1, 2 seeds)",
    ]
    assert ax.get_xlabel() == "environment steps per seed"
    assert ax.get_ylabel() == "episode return (mean over seeds)"
    assert ax.get_title() == "PPO on CartPole-v1\nband: ±1 std over seeds"
    # The mean of the seeds that ended episodes; a row where none did is left out.
    np.testing.assert_allclose(ax.lines[0].get_xydata(), [[100, 3], [200, 4], [300, 5]])
    # Rows of two or more seeds get a band; the row of one seed none.
    std = np.std([0, 3, 6])
    assert band_edges(ax.collections[0]) == [round(3 - std, 6), 2, round(3 + std, 6), 6]

    ax = axes_of(draw_runs([a], band="minmax"))
    assert band_edges(ax.collections[0]) == [0, 2, 6]
    assert "band: min to max over seeds" in ax.get_title() and ax.get_legend() is None
    assert not axes_of(draw_runs([a, b], band="none")).collections


def test_iqm_line_with_a_bootstrap_band_over_the_seeds(tmp_path):
    # 8 seeds, one far off (a seed stuck on a plateau): the IQM keeps the middle half.
    rows = [[1, 2, 3, 4, 5, 6, 7, 100], [10, 10, 10, 10, 10, 10, 10, 10], [4, None] + [None] * 6]
    a = write_run(tmp_path / "a", rows, seeds=8)
    ax = axes_of(draw_runs([a], stat="iqm"))
    assert ax.get_ylabel() == "episode return (IQM over seeds)"
    assert ax.get_title() == "PPO on CartPole-v1\nband: 95% bootstrap CI over seeds"
    np.testing.assert_allclose(ax.lines[0].get_ydata(), [4.5, 10, 4])
    # The band is rollax.stats.interval over each row's seeds: none for a row of one seed.
    _, low, high = stats.interval(np.array(rows[0], float), reps=2_000, seed=0)
    assert band_edges(ax.collections[0]) == sorted({round(low, 6), round(high, 6), 10.0})
    # The mean with a "ci" band: the bootstrap interval of the mean.
    ax = axes_of(draw_runs([a], band="ci"))
    np.testing.assert_allclose(ax.lines[0].get_ydata()[0], np.mean(rows[0]))
    _, low, high = stats.interval(np.array(rows[0], float), np.mean, reps=2_000, seed=0)
    assert band_edges(ax.collections[0]) == sorted({round(low, 6), round(high, 6), 10.0})


def test_smoothing_is_a_trailing_mean_per_seed_of_the_values_present(tmp_path):
    values = [[1, 10], [None, 20], [3, None], [5, 40], [7, 50]]
    a = write_run(tmp_path / "a", values)
    ax = axes_of(draw_runs([a], smooth=2))
    expected = []
    for row in range(len(values)):
        window = values[max(row - 1, 0) : row + 1]
        seeds = [[r[s] for r in window if r[s] is not None] for s in range(2)]
        expected.append(np.mean([np.mean(v) for v in seeds if v]))
    np.testing.assert_allclose(ax.lines[0].get_ydata(), expected)
    assert "trailing mean of 2 logging intervals" in ax.get_title()


def test_the_time_axis_sums_each_intervals_seconds(tmp_path):
    a = write_run(tmp_path / "a", [[1, 2], [3, 4], [5, 6]])
    ax = axes_of(draw_runs([a], x="time"))
    # 100 steps per seed x 2 seeds at 1,000 steps/s: 0.2 s per interval.
    np.testing.assert_allclose(ax.lines[0].get_xdata(), [0.2, 0.4, 0.6])
    assert ax.get_xlabel() == "wall-clock training time (s; compilation excluded)"


def test_a_run_from_before_per_seed_columns_draws_its_mean_alone(tmp_path):
    old = write_run(tmp_path / "old", None, seeds=4, mean_only=[1.5, None, 2.5])
    new = write_run(tmp_path / "new", [[1, 2], [3, 4], [5, 6]])
    ax = axes_of(draw_runs([old, new]))
    assert len(ax.lines) == 2 and len(ax.collections) == 1
    np.testing.assert_allclose(ax.lines[0].get_xydata(), [[100, 1.5], [300, 2.5]])


def test_a_run_still_writing_its_last_row_is_drawn_without_it(tmp_path):
    a = write_run(tmp_path / "a", [[1, 3], [2, 6]])
    with (a / "metrics.csv").open("a") as f:
        f.write("300,2,0,1000.0,4.0")
    np.testing.assert_allclose(axes_of(draw_runs([a])).lines[0].get_xdata(), [100, 200])


def test_a_resumed_old_run_keeps_its_columns(tmp_path):
    """A run whose metrics.csv predates a column keeps its header when a later version resumes."""
    path = tmp_path / "metrics.csv"
    path.write_text("env_steps,episode_return\n100,1.5000\n")
    columns = ("env_steps", "episode_return", "episode_return_seed0")
    sink = RunDirectory(tmp_path).open_metrics(columns)
    sink.write(200, {"env_steps": 200, "episode_return": "2.0", "episode_return_seed0": "1.0"})
    sink.close()
    assert path.read_text() == "env_steps,episode_return\n100,1.5000\n200,2.0\n"


def test_plot_runs_writes_the_picture_atomically(tmp_path):
    a = write_run(tmp_path / "a", [[1, 3], [2, 6]])
    out = plot_runs([str(a)], tmp_path / "plots" / "curves.png")
    assert out == tmp_path / "plots" / "curves.png"
    assert iio.imread(out).ndim == 3
    assert sorted(p.name for p in out.parent.iterdir()) == ["curves.png"]  # no temporary left
    assert plot_curve(a) == a / "curve.png" and iio.imread(a / "curve.png").ndim == 3


def test_same_directory_names_are_told_apart_by_their_paths(tmp_path):
    a = write_run(tmp_path / "x" / "run", [[1, 3]])
    b = write_run(tmp_path / "y" / "run", [[2, 4]])
    labels = [t.get_text() for t in axes_of(draw_runs([a, b])).get_legend().get_texts()]
    assert labels == [f"{a} (PPO, CartPole-v1, 2 seeds)", f"{b} (PPO, CartPole-v1, 2 seeds)"]


def test_a_run_without_a_finished_episode_has_no_curve_yet(tmp_path):
    empty = write_run(tmp_path / "empty", [[None, None]])
    with pytest.raises(ValueError, match="logged no finished episode yet"):
        draw_runs([empty])
    assert plot_curve(empty) is None
    (empty / "metrics.csv").write_text("")  # as a kill left it before its header was whole
    with pytest.raises(ValueError, match="logged no finished episode yet"):
        draw_runs([empty])
    assert plot_curve(empty) is None
    (empty / "metrics.csv").unlink()
    with pytest.raises(ValueError, match=r"has no metrics\.csv yet"):
        draw_runs([empty])
    assert plot_curve(empty) is None


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"run_dirs": []}, ValueError, "run_dirs is empty"),
        ({"run_dirs": "a"}, TypeError, r"got the single path 'a'; pass \['a'\]"),
        ({"x": "wall"}, ValueError, "x must be one of steps, time, got 'wall'"),
        ({"band": "iqr"}, ValueError, "band must be one of std, minmax, ci, none, got 'iqr'"),
        ({"stat": "median"}, ValueError, "stat must be one of mean, iqm, got 'median'"),
        ({"smooth": 0}, ValueError, r"smooth must be a whole number .* got 0\."),
        ({"smooth": 2.5}, ValueError, r"smooth must be a whole number .* got 2\.5"),
        ({"out": "curves.avi"}, ValueError, r"out 'curves\.avi' must end in one of .*\.png"),
    ],
)
def test_bad_arguments_are_refused_naming_them(tmp_path, kwargs, error, message):
    args = {"run_dirs": [write_run(tmp_path / "a", [[1, 2]])], "out": tmp_path / "c.png"}
    with pytest.raises(error, match=message):
        plot_runs(**(args | kwargs))
    assert not (tmp_path / "c.png").exists()


def test_a_directory_that_is_not_a_run_is_refused(tmp_path):
    with pytest.raises(ValueError, match=r"holds no run \(no config\.json\)"):
        draw_runs([tmp_path])
    with pytest.raises(ValueError, match="does not exist"):
        draw_runs([tmp_path / "missing"])
    (tmp_path / "file").write_text("")
    with pytest.raises(ValueError, match="is not a directory"):
        draw_runs([tmp_path / "file"])
