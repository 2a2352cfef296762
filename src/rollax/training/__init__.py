"""The training layer that every agent shares: what turns an algorithm into a compiled agent.

- The agent interface (:class:`Agent`, :class:`Policy`) and :func:`build_agent`, which turns
  an algorithm's pure pieces (:class:`AgentPieces`), written for one seed on one shard, into
  ``init``/``run``/``evaluate``.
- Layouts (:class:`Layout`, the tags :data:`SEED`, :data:`SHARD`, :data:`SHARED`,
  :data:`ENV_PARAMS`): how seeds and shards map onto a mesh of devices; the one gradient
  step of every agent (:class:`GradientStep`); the configuration fields of scale
  (:class:`ScaleConfig`) and of the optimizer (:class:`OptimizerConfig`, built with optax by
  :class:`Optimizer`, its per-seed values :class:`OptimizerHyperParams`).
- One evaluator for every agent, with the state's params and episode limit.
- The host composition (:func:`host_loop`, :func:`build_host_agent`): the same pieces and
  :class:`Agent` for environments that step on the host (:mod:`rollax.host`), with a
  driver's :class:`HostIteration` stepping them between compiled programs.
- Sweeps (``sweep`` in an agent's config): grid points times seeds as members of one program
  (:func:`point_labels` names the points).
- Configuration decoded by field type (:func:`decode_config`, :func:`with_defaults`), and
  the checks of its fields that every agent's ``validate`` is made of (:func:`check_fields`,
  :func:`check_activation`, :func:`check_widths`, :func:`check_replay`).

Running an agent on disk (``train``, ``resume``, run directories, metrics, plots, video,
population-based training, processes) lives in :mod:`rollax.runs`, with the algorithm
registry that the command line and run directories dispatch on.
"""

from rollax.training._agent import (
    EPISODE_METRICS,
    Agent,
    AgentPieces,
    Policy,
    ShardStart,
    check_budget,
    feedforward_policy,
    gradient_step_for,
    layout_for,
)
from rollax.training._compose import build_agent
from rollax.training._config import ConfigError, config_to_json, decode_config, with_defaults
from rollax.training._envs import shard_env, training_env
from rollax.training._evaluate import make_evaluator, params_for_batch
from rollax.training._host import (
    RESTARTED,
    HostIteration,
    HostLoop,
    apart_from_acting,
    build_host_agent,
    host_loop,
)
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
from rollax.training._optim import (
    OPTIMIZER_DATA,
    OPTIMIZERS,
    SCHEDULES,
    GradientStep,
    Optimizer,
    OptimizerConfig,
    OptimizerHyperParams,
    optimizer_factory,
    optimizer_values,
    polyak,
    schedule_multiplier,
    stretch_schedule,
)
from rollax.training._scale_config import ScaleConfig
from rollax.training._seeds import vmap_seeds
from rollax.training._sweep import point_labels
from rollax.training._validate import check_activation, check_fields, check_replay, check_widths

__all__ = [
    "ENV_PARAMS",
    "EPISODE_METRICS",
    "OPTIMIZERS",
    "OPTIMIZER_DATA",
    "RESTARTED",
    "SCHEDULES",
    "SEED",
    "SHARD",
    "SHARED",
    "Agent",
    "AgentPieces",
    "ConfigError",
    "GradientStep",
    "HostIteration",
    "apart_from_acting",
    "HostLoop",
    "Layout",
    "Optimizer",
    "OptimizerConfig",
    "OptimizerHyperParams",
    "Policy",
    "ScaleConfig",
    "ShardStart",
    "build_agent",
    "build_host_agent",
    "check_activation",
    "check_budget",
    "check_fields",
    "check_replay",
    "check_widths",
    "config_to_json",
    "decode_config",
    "feedforward_policy",
    "gradient_step_for",
    "host_loop",
    "layout_for",
    "make_evaluator",
    "make_layout",
    "map_axis",
    "map_seeds",
    "optimizer_factory",
    "optimizer_values",
    "params_for_batch",
    "point_labels",
    "polyak",
    "schedule_multiplier",
    "stretch_schedule",
    "resolve_devices",
    "shard_env",
    "training_env",
    "vmap_seeds",
    "with_defaults",
]
