"""The training layer that every agent shares.

- The agent interface (:class:`Agent`, :class:`Policy`) and :func:`build_agent`, which turns
  an algorithm's pure pieces into ``init``/``run``/``evaluate``.
- The algorithm registry (:class:`Algorithm`, :func:`get_algorithm`) that the command line
  and run directories dispatch on.
- One evaluator for every agent, with the state's params and episode limit.
- Runs on disk: :func:`train`, :func:`resume`, :func:`load_run`, :func:`evaluate_run`,
  :func:`write_video`, with metrics, progress, checkpoints, a NaN guard and clean stops.
- Learning curves: :func:`plot_runs` (:func:`draw_runs`) overlays several runs, the mean
  over each run's seeds with a band for their spread.
- Configuration files decoded by field type, and the random keys of a run.
"""

from rollax.training._agent import (
    EPISODE_METRICS,
    Agent,
    Policy,
    build_agent,
    check_budget,
    feedforward_policy,
)
from rollax.training._config import ConfigError, config_to_json, decode_config
from rollax.training._envs import training_env
from rollax.training._evaluate import make_evaluator, params_for_batch
from rollax.training._keys import RunKeys, run_keys
from rollax.training._loop import COMMON_METRICS, TrainingDiverged
from rollax.training._plots import draw_runs, plot_curve, plot_runs
from rollax.training._registry import (
    Algorithm,
    algorithm_for_config,
    algorithms,
    get_algorithm,
    register,
)
from rollax.training._run import (
    Run,
    RunConfig,
    enable_compilation_cache,
    evaluate_run,
    load_run,
    resume,
    train,
    write_video,
)
from rollax.training._run_dir import RunDirectory
from rollax.training._seeds import vmap_seeds
from rollax.training._video import check_video_path, record_episode

__all__ = [
    "COMMON_METRICS",
    "EPISODE_METRICS",
    "Agent",
    "Algorithm",
    "ConfigError",
    "Policy",
    "Run",
    "RunConfig",
    "RunDirectory",
    "RunKeys",
    "TrainingDiverged",
    "algorithm_for_config",
    "algorithms",
    "build_agent",
    "check_budget",
    "check_video_path",
    "config_to_json",
    "decode_config",
    "draw_runs",
    "enable_compilation_cache",
    "evaluate_run",
    "feedforward_policy",
    "get_algorithm",
    "load_run",
    "make_evaluator",
    "params_for_batch",
    "plot_curve",
    "plot_runs",
    "record_episode",
    "register",
    "resume",
    "run_keys",
    "train",
    "training_env",
    "vmap_seeds",
    "write_video",
]
