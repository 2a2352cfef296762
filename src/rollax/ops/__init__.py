"""Pure math for training: GAE, n-step, λ- and Retrace returns, C51, normalization, shifts."""

from rollax.ops._augment import random_shift
from rollax.ops._categorical import categorical_projection
from rollax.ops._gae import gae
from rollax.ops._normalize import (
    RunningStats,
    normalize,
    normalize_observation,
    observation_stats,
    running_stats,
    update_observation_stats,
    update_running_stats,
)
from rollax.ops._nstep import NStepReturn, nstep_return
from rollax.ops._sequence_returns import lambda_returns, nstep_targets, retrace_targets

__all__ = [
    "NStepReturn",
    "RunningStats",
    "categorical_projection",
    "gae",
    "lambda_returns",
    "normalize",
    "normalize_observation",
    "nstep_return",
    "nstep_targets",
    "observation_stats",
    "random_shift",
    "retrace_targets",
    "running_stats",
    "update_observation_stats",
    "update_running_stats",
]
