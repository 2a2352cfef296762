"""Correlated exploration (SAC's and TD3's ``exploration_correlation``) as tests see it, and
bit-identical resumes of their runs."""

from pathlib import Path
from typing import Any

import jax
import numpy as np

from rollax.checkpoints import Checkpointer


def run_and_record_noise(agent: Any, state: Any, steps: int) -> tuple[Any, np.ndarray]:
    """Run ``steps`` iterations and keep the first action dimension of the noise the first
    seed's first shard holds after each: ``(state, float (steps, envs))``."""
    noises = []
    for _ in range(steps):
        state, _ = agent.run(state, agent.config.steps_per_iteration)
        noises.append(np.asarray(state.exploration[0, 0, :, 0]))
    return state, np.stack(noises)


def assert_red_noise(noise: np.ndarray, correlation: float) -> None:
    """``noise`` (``(steps, envs)``) has a standard normal marginal and lag-1 correlation
    ``correlation``: an AR(1) process, not independent draws."""
    assert abs(noise.mean()) < 0.1 and abs(noise.std() - 1.0) < 0.1, (noise.mean(), noise.std())
    lag1 = np.corrcoef(noise[:-1].ravel(), noise[1:].ravel())[0, 1]
    assert abs(lag1 - correlation) < 0.05, lag1


def assert_resume_is_bit_identical(agent: Any, key: jax.Array, steps: int, path: Path) -> None:
    """A run of ``steps`` from ``agent.init(key)`` equals one checkpointed to ``path`` half-way,
    restored and run on, in every leaf of the state: the replay buffer, and the exploration
    noise the state holds, resume where they stopped."""
    start = agent.init(key)
    whole, _ = agent.run(start, steps)
    half, _ = agent.run(start, steps // 2)
    checkpoints = Checkpointer(path / "checkpoints")
    checkpoints.save(steps // 2, half, {})
    restored, _ = checkpoints.restore(jax.eval_shape(agent.init, jax.random.key(0)))
    resumed, _ = agent.run(restored, steps - steps // 2)
    for a, b in zip(jax.tree.leaves(whole), jax.tree.leaves(resumed), strict=True):
        if jax.dtypes.issubdtype(a.dtype, jax.dtypes.prng_key):
            a, b = jax.random.key_data(a), jax.random.key_data(b)
        np.testing.assert_array_equal(a, b)
