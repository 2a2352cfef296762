"""Pure math for training: advantage estimation, running normalization, augmentation."""

from rollax.ops._augment import random_shift
from rollax.ops._gae import gae
from rollax.ops._normalize import RunningStats, normalize, running_stats, update_running_stats

__all__ = [
    "RunningStats",
    "gae",
    "normalize",
    "random_shift",
    "running_stats",
    "update_running_stats",
]
