"""PPO's MinAtar presets learn each game on most seeds, well above where the old preset stalled.

Training on MinAtar is chaotic: the same code and seeds give other returns on a CPU that sums
floats in another order, and Breakout is bimodal (a run leaves the plateau near 7 or stays
on it). So no test expects one seed to learn. Each trains several seeds in one program (the
learning rate annealed over the test's budget: the full 1M steps for Breakout, which learns
late, a quarter of it for SpaceInvaders), evaluates 64 episodes of each with sampled actions,
and asserts that at least k of the n seeds end above a threshold. The thresholds sit well
below where the seeds end and well above the untrained policy (both stated per game).

Two games of the four: Breakout, the game the preset was retuned for, and SpaceInvaders, the
cheapest of the others. Asterix and Freeway (160 and 150 s here, with no code of their own
beyond the preset's values) are measured with the other two, the full budget over 10 seeds,
by benchmarks/returns.py, whose table the docs give.

The gymnax authors' settings with their constant lr 5e-4 stall Breakout's seeds on the
plateau, and fail the Breakout case: 0 of 4 seeds above 15 when checked (returns 6.4 to
11.3).
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

from rollax.agents.ppo import PRESETS, PPOConfig, make_ppo

# game: (steps, seeds, at least, threshold). When the cases were set, 10 seeds of the preset
# in one program, and the untrained policy (64 episodes each): Breakout after 1M steps 20.7
# to 42.1, all 10 above 15 (untrained 0.5; the plateau 7.0); SpaceInvaders after 262k 16.7 to
# 23.2 (4.2). With every seed of 10 above the threshold, 2 of 3 fail together less often than
# 3 of 4 do; 3 seeds take three quarters of 4's time.
CASES = {
    "Breakout": (1_048_576, 3, 2, 15.0),
    "SpaceInvaders": (262_144, 3, 2, 12.0),
}


def seed_returns(config: PPOConfig, task: str) -> np.ndarray:
    """Each seed's mean return over 64 sampled episodes after training all ``num_seeds``
    seeds of ``config`` in one program: float ``(num_seeds,)``."""
    agent = make_ppo(config, task)
    state, _ = agent.run(agent.init(jax.random.key(0)), config.total_steps)
    return np.asarray(agent.evaluate(state, jax.random.key(1), 64, False)).mean(axis=1)


@pytest.mark.slow
@pytest.mark.extra("gymnax")
@pytest.mark.parametrize("game", sorted(CASES))
def test_minatar_preset_learns_the_game_on_most_seeds(game):
    steps, seeds, at_least, threshold = CASES[game]
    task = f"gymnax/{game}-MinAtar"
    returns = seed_returns(PRESETS[task].replace(total_steps=steps, num_seeds=seeds), task)
    assert (returns > threshold).sum() >= at_least, returns
