"""Pure math for training: advantage estimation and running normalization."""

from rollax.ops._gae import gae
from rollax.ops._normalize import RunningStats, normalize, running_stats, update_running_stats

__all__ = ["RunningStats", "gae", "normalize", "running_stats", "update_running_stats"]
