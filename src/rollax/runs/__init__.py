"""Running agents on disk: a run directory that trains, stops, resumes and evaluates.

- :func:`train` and :func:`resume` run an agent of :mod:`rollax.agents` (or any agent built
  on :mod:`rollax.training`) in a run directory (:class:`RunDirectory`): its config, metrics
  (CSV, TensorBoard, Weights & Biases, MLflow), checkpoints, a progress bar, a NaN guard
  (:class:`TrainingDiverged`) and clean stops on a signal. Resuming is bit for bit. Without
  ``RunConfig.run_dir``, a run's directory is ``runs/ENV-ALGO-TIME`` (``run_dir_for``); JAX's
  compilation cache for runs is :func:`compilation_cache_dir`
  (:func:`enable_compilation_cache`), and :func:`precompile` fills it without training.
- :func:`load_run` and :func:`evaluate_run` read a run back; :func:`write_video` records an
  episode of its agent (:func:`record_episode`, :func:`check_video_path`).
- Learning curves: :func:`plot_runs` (:func:`draw_runs`) overlays several runs, the mean
  over each run's seeds with a band for their spread; :func:`plot_curve` one run's metric.
  The choices of their axis, line and band: :data:`X_AXES`, :data:`STATS`, :data:`BANDS`.
- Population-based training (``RunConfig.pbt_*``): the schedules that emerged
  (:func:`plot_population`, :func:`draw_population`) and the best member's
  (:func:`best_lineage`).
- Several processes as one run (:class:`Cluster`, :func:`agree_any`), and the random keys
  of a run (:class:`RunKeys`, :func:`run_keys`).
- The algorithm registry (:class:`Algorithm`, :func:`register`, :func:`get_algorithm`) that
  the command line, ``config.json`` and :func:`load_run` dispatch on; the algorithms of
  :mod:`rollax.agents` are registered on its first use.
"""

from rollax.runs._distributed import Cluster, agree_any
from rollax.runs._keys import RunKeys, run_keys
from rollax.runs._loop import Callback, TrainingDiverged
from rollax.runs._plots import (
    BANDS,
    STATS,
    X_AXES,
    draw_population,
    draw_runs,
    plot_curve,
    plot_population,
    plot_runs,
)
from rollax.runs._population import best_lineage
from rollax.runs._registry import (
    Algorithm,
    algorithm_for_config,
    algorithms,
    get_algorithm,
    register,
)
from rollax.runs._run import (
    compilation_cache_dir,
    enable_compilation_cache,
    evaluate_run,
    load_run,
    precompile,
    resume,
    run_dir_for,
    train,
    write_video,
)
from rollax.runs._run_dir import RunDirectory
from rollax.runs._run_state import Run, RunConfig
from rollax.runs._sinks import COMMON_METRICS
from rollax.runs._video import check_video_path, record_episode

__all__ = [
    "BANDS",
    "COMMON_METRICS",
    "Algorithm",
    "Callback",
    "Cluster",
    "Run",
    "RunConfig",
    "RunDirectory",
    "RunKeys",
    "STATS",
    "TrainingDiverged",
    "X_AXES",
    "agree_any",
    "algorithm_for_config",
    "algorithms",
    "best_lineage",
    "check_video_path",
    "compilation_cache_dir",
    "draw_population",
    "draw_runs",
    "enable_compilation_cache",
    "evaluate_run",
    "get_algorithm",
    "load_run",
    "plot_curve",
    "plot_population",
    "plot_runs",
    "precompile",
    "record_episode",
    "register",
    "resume",
    "run_dir_for",
    "run_keys",
    "train",
    "write_video",
]
