"""The training layer that every agent shares.

- The agent interface (:class:`Agent`, :class:`Policy`) and :func:`build_agent`, which turns
  an algorithm's pure pieces, written for one seed on one shard, into
  ``init``/``run``/``evaluate``.
- Layouts (:class:`Layout`, the tags :data:`SEED`, :data:`SHARD`, :data:`SHARED`,
  :data:`ENV_PARAMS`): how seeds and shards map onto a mesh of devices; the one gradient
  step of every agent (:class:`GradientStep`); the configuration fields of scale
  (:class:`ScaleConfig`) and of the optimizer (:class:`OptimizerConfig`, built with optax by
  :class:`Optimizer`, its per-seed values :class:`OptimizerHyperParams`).
- The algorithm registry (:class:`Algorithm`, :func:`get_algorithm`) that the command line
  and run directories dispatch on.
- One evaluator for every agent, with the state's params and episode limit.
- Runs on disk: :func:`train`, :func:`resume`, :func:`load_run`, :func:`evaluate_run`,
  :func:`write_video`, with metrics, progress, checkpoints, a NaN guard and clean stops.
- Learning curves: :func:`plot_runs` (:func:`draw_runs`) overlays several runs, the mean
  over each run's seeds with a band for their spread.
- Population-based training (``RunConfig.pbt_*``): the schedules that emerged
  (:func:`plot_population`, :func:`draw_population`) and the best member's
  (:func:`best_lineage`).
- Configuration files decoded by field type, and the random keys of a run.
"""

from rollax.training._agent import (
    EPISODE_METRICS,
    Agent,
    Policy,
    ShardStart,
    build_agent,
    check_budget,
    feedforward_policy,
    layout_for,
)
from rollax.training._config import ConfigError, config_to_json, decode_config, with_defaults
from rollax.training._distributed import Cluster, agree_any
from rollax.training._envs import shard_env, training_env
from rollax.training._evaluate import make_evaluator, params_for_batch
from rollax.training._keys import RunKeys, run_keys
from rollax.training._layout import (
    ENV_PARAMS,
    SEED,
    SHARD,
    SHARED,
    Layout,
    make_layout,
    map_axis,
    map_seeds,
    resolve_devices,
)
from rollax.training._loop import COMMON_METRICS, Callback, TrainingDiverged
from rollax.training._optim import (
    OPTIMIZER_DATA,
    OPTIMIZERS,
    SCHEDULES,
    GradientStep,
    Optimizer,
    OptimizerConfig,
    OptimizerHyperParams,
    optimizer_values,
    polyak,
    schedule_multiplier,
    stretch_schedule,
)
from rollax.training._plots import (
    draw_population,
    draw_runs,
    plot_curve,
    plot_population,
    plot_runs,
)
from rollax.training._population import best_lineage
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
from rollax.training._scale_config import ScaleConfig
from rollax.training._seeds import vmap_seeds
from rollax.training._video import check_video_path, record_episode

__all__ = [
    "COMMON_METRICS",
    "ENV_PARAMS",
    "EPISODE_METRICS",
    "OPTIMIZERS",
    "OPTIMIZER_DATA",
    "SCHEDULES",
    "SEED",
    "SHARD",
    "SHARED",
    "Agent",
    "Algorithm",
    "Cluster",
    "ConfigError",
    "GradientStep",
    "Layout",
    "Optimizer",
    "OptimizerConfig",
    "OptimizerHyperParams",
    "Policy",
    "Run",
    "RunConfig",
    "RunDirectory",
    "RunKeys",
    "ScaleConfig",
    "ShardStart",
    "TrainingDiverged",
    "Callback",
    "agree_any",
    "algorithm_for_config",
    "algorithms",
    "best_lineage",
    "build_agent",
    "check_budget",
    "check_video_path",
    "config_to_json",
    "decode_config",
    "draw_population",
    "draw_runs",
    "enable_compilation_cache",
    "evaluate_run",
    "feedforward_policy",
    "get_algorithm",
    "layout_for",
    "load_run",
    "make_evaluator",
    "make_layout",
    "map_axis",
    "map_seeds",
    "optimizer_values",
    "params_for_batch",
    "plot_curve",
    "plot_population",
    "plot_runs",
    "polyak",
    "record_episode",
    "schedule_multiplier",
    "stretch_schedule",
    "register",
    "resolve_devices",
    "resume",
    "run_keys",
    "train",
    "shard_env",
    "training_env",
    "vmap_seeds",
    "with_defaults",
    "write_video",
]
