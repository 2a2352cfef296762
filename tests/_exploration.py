"""Correlated exploration (SAC's and TD3's ``exploration_correlation``) as tests see it."""

from typing import Any

import numpy as np


def run_and_record_noise(agent: Any, state: Any, steps: int) -> tuple[Any, np.ndarray]:
    """Run ``steps`` iterations and keep the first action dimension of the noise the first
    seed's first shard holds after each: ``(state, float (steps, envs))``."""
    noises = []
    for _ in range(steps):
        state, _ = agent.run(state, agent.config.steps_per_iteration)
        noises.append(np.asarray(state.explore[0, 0, :, 0]))
    return state, np.stack(noises)


def assert_red_noise(noise: np.ndarray, correlation: float) -> None:
    """``noise`` (``(steps, envs)``) has a standard normal marginal and lag-1 correlation
    ``correlation``: an AR(1) process, not independent draws."""
    assert abs(noise.mean()) < 0.1 and abs(noise.std() - 1.0) < 0.1, (noise.mean(), noise.std())
    lag1 = np.corrcoef(noise[:-1].ravel(), noise[1:].ravel())[0, 1]
    assert abs(lag1 - correlation) < 0.05, lag1
