"""Running mean and variance of observations, as part of a training state.

For dict observations (docs/design.md §6) the vector entries are normalized and the images left as
they are (networks scale them to ``[0, 1]``): :func:`observation_stats`,
:func:`normalize_observation` and :func:`update_observation_stats` work on either kind.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from rollax._struct import pytree_dataclass
from rollax.spaces import is_image_key

__all__ = [
    "RunningStats",
    "normalize",
    "normalize_observation",
    "observation_stats",
    "running_stats",
    "update_observation_stats",
    "update_running_stats",
]


@pytree_dataclass
class RunningStats:
    """Mean and variance of everything seen so far (Chan et al.'s parallel update).

    Attributes:
        mean: float32 ``shape``.
        var: float32 ``shape``, the population variance.
        count: float32 ``()``, the number of samples (a small positive prior at the start, as
            Gymnasium's and Stable-Baselines3's normalizers do, so the first division is safe).
    """

    mean: jax.Array
    var: jax.Array
    count: jax.Array


def running_stats(shape: tuple[int, ...]) -> RunningStats:
    """Stats before any sample: mean 0, variance 1, count 1e-4."""
    return RunningStats(
        mean=jnp.zeros(shape, jnp.float32),
        var=jnp.ones(shape, jnp.float32),
        count=jnp.full((), 1e-4, jnp.float32),
    )


def update_running_stats(
    stats: RunningStats,
    batch: jax.Array,
    shard_mean: Callable[[Any], Any] | None = None,
    num_shards: int = 1,
) -> RunningStats:
    """Fold a batch into the stats.

    Args:
        stats: The current stats, of some ``shape``.
        batch: float ``(..., *shape)``: any number of leading sample axes.
        shard_mean: For a batch split into ``num_shards`` equal shards (one per call, as
            the training layer runs a seed's shards): the mean over the shards
            (:meth:`rollax.training.Layout.mean`). The moments are then those of the whole
            batch, the same on every shard.
        num_shards: The number of shards ``shard_mean`` averages over.
    """
    batch = batch.astype(jnp.float32).reshape(-1, *stats.mean.shape)
    batch_count = jnp.asarray(batch.shape[0] * num_shards, jnp.float32)
    if shard_mean is None:
        batch_mean = batch.mean(axis=0)
        batch_var = batch.var(axis=0)
    else:
        batch_mean = shard_mean(batch.mean(axis=0))
        batch_var = shard_mean(jnp.square(batch - batch_mean).mean(axis=0))
    total = stats.count + batch_count
    delta = batch_mean - stats.mean
    mean = stats.mean + delta * (batch_count / total)
    m2 = (
        stats.var * stats.count
        + batch_var * batch_count
        + delta**2 * (stats.count * batch_count / total)
    )
    return RunningStats(mean=mean, var=m2 / total, count=total)


def normalize(
    stats: RunningStats, x: jax.Array, clip: float = 10.0, eps: float = 1e-8
) -> jax.Array:
    """``(x - mean) / sqrt(var + eps)``, clipped to ``[-clip, clip]``.

    Args:
        stats: Stats of some ``shape``.
        x: float ``(..., *shape)``, any number of leading axes.
        clip: Bound of the normalized values.
        eps: Added to the variance before the square root.
    """
    mean = jnp.broadcast_to(stats.mean, x.shape)
    scale = jnp.broadcast_to(jnp.sqrt(stats.var + eps), x.shape)
    return jnp.clip((x - mean) / scale, -clip, clip)


def observation_stats(spec: Any) -> Any:
    """Stats before any sample for observations of ``spec``.

    Args:
        spec: A ``jax.ShapeDtypeStruct`` of a vector observation, or a dict of them (see
            :func:`rollax.spaces.observation_spec`).

    Returns:
        A :class:`RunningStats`, or a dict of them for the non-image entries.
    """
    if isinstance(spec, dict):
        return {k: running_stats(s.shape) for k, s in spec.items() if not is_image_key(k)}
    return running_stats(spec.shape)


def normalize_observation(stats: Any, obs: Any) -> Any:
    """:func:`normalize` the entries of ``obs`` that ``stats`` has (images pass through)."""
    if isinstance(obs, dict):
        return {k: normalize(stats[k], v) if k in stats else v for k, v in obs.items()}
    return normalize(stats, obs)


def update_observation_stats(
    stats: Any, obs: Any, shard_mean: Callable[[Any], Any] | None = None, num_shards: int = 1
) -> Any:
    """Fold a batch of observations (any leading axes) into :func:`observation_stats`.

    ``shard_mean`` and ``num_shards``: as :func:`update_running_stats`'s.
    """
    if isinstance(obs, dict):
        return {k: update_running_stats(stats[k], obs[k], shard_mean, num_shards) for k in stats}
    return update_running_stats(stats, obs, shard_mean, num_shards)
