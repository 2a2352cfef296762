"""Classic control dynamics match Gymnasium's own implementations step for step.

Each test runs one rollax environment and the same Gymnasium environment (with Gymnasium's
TimeLimit) side by side for 1,200 steps over many episodes, feeding both the same actions.
Before every step Gymnasium is put in rollax's current state, then observations, rewards,
``terminated`` and ``truncated`` are compared after the step. (Without that, Gymnasium's
float64 and rollax's float32 arithmetic drift apart within about a hundred steps on the
unstable systems, as any two precisions do; the per-step sync compares the dynamics
themselves at every state the episodes visit.) The policies mix a heuristic with random
actions; episodes alternate between the default time limit and a short one, so that they
end both ways: terminated (goal or failure) and truncated.
"""

from __future__ import annotations

from collections.abc import Callable

import gymnasium
import jax
import numpy as np
import pytest

import rollax

pytestmark = pytest.mark.extra("gymnasium")

NUM_STEPS = 1200


def _cartpole_state(core) -> np.ndarray:
    return np.array([core.x, core.x_dot, core.theta, core.theta_dot], np.float64)


def _acrobot_state(core) -> np.ndarray:
    return np.array([core.theta1, core.theta2, core.dtheta1, core.dtheta2], np.float64)


def _mountain_car_state(core) -> np.ndarray:
    return np.array([core.position, core.velocity], np.float64)


def _pendulum_state(core) -> np.ndarray:
    return np.array([core.theta, core.theta_dot], np.float64)


def _cartpole_policy(obs, rng):
    if rng.random() < 0.2 or rng.random() < 0.5 * (abs(obs[0]) > 0.1):
        return int(rng.integers(2))
    return int(obs[2] + 0.5 * obs[3] > 0)  # keeps the pole up for a while


def _acrobot_policy(obs, rng):
    if rng.random() < 0.1:
        return int(rng.integers(3))
    return 2 if obs[5] > 0 else 0  # pump energy with the second joint


def _mountain_car_policy(obs, rng):
    if rng.random() < 0.3:
        return int(rng.integers(3))
    return 2 if obs[1] > 0 else 0


def _mountain_car_continuous_policy(obs, rng):
    noise = rng.normal(0.0, 0.5)
    return np.array([np.sign(obs[1]) * 1.2 + noise], np.float32)  # beyond the bound: clipped


def _pendulum_policy(obs, rng):
    return np.array([rng.uniform(-2.5, 2.5)], np.float32)  # beyond the bound: clipped


CASES = {
    # env id: (rollax state -> Gymnasium state, policy)
    "CartPole-v1": (_cartpole_state, _cartpole_policy),
    "Acrobot-v1": (_acrobot_state, _acrobot_policy),
    "MountainCar-v0": (_mountain_car_state, _mountain_car_policy),
    "MountainCarContinuous-v0": (_mountain_car_state, _mountain_car_continuous_policy),
    "Pendulum-v1": (_pendulum_state, _pendulum_policy),
}
SHORT_LIMIT = 40


def _run_side_by_side(env_id: str, to_gym_state: Callable, policy: Callable):
    """Episodes alternate between Gymnasium's time limit and a short one (changed through
    ``params``, without recompiling), so that both ways of ending occur."""
    env = rollax.make(env_id, autoreset_mode="disabled")
    gym_base = gymnasium.make(env_id).unwrapped
    gym_base.reset(seed=0)
    reset = jax.jit(env.reset)
    step = jax.jit(env.step)
    rng = np.random.default_rng(0)
    key = jax.random.key(42)

    outcomes = {"terminated": 0, "truncated": 0}
    state, episode = None, 0
    for t in range(NUM_STEPS):
        if state is None:  # a new episode in both
            limit = gymnasium.spec(env_id).max_episode_steps if episode % 2 == 0 else SHORT_LIMIT
            params = env.default_params.replace(max_episode_steps=limit)
            gym_env = gymnasium.wrappers.TimeLimit(gym_base, limit)
            key, reset_key = jax.random.split(key)
            state, ts = reset(reset_key, params)
            gym_env.reset()
            obs = np.asarray(ts.obs)
        gym_base.state = to_gym_state(state.core)
        action = policy(obs, rng)
        jax_action = np.asarray(action, np.int32 if np.ndim(action) == 0 else np.float32)
        state, ts = step(state, jax_action, params)
        g_obs, g_reward, g_terminated, g_truncated, _ = gym_env.step(action)
        obs = np.asarray(ts.obs)
        np.testing.assert_allclose(obs, g_obs, rtol=1e-5, atol=1e-5, err_msg=f"{env_id} step {t}")
        np.testing.assert_allclose(float(ts.reward), g_reward, rtol=1e-5, atol=1e-5)
        assert bool(ts.terminated) == g_terminated, f"{env_id} terminated differs at step {t}"
        assert bool(ts.truncated) == g_truncated, f"{env_id} truncated differs at step {t}"
        if g_terminated or g_truncated:
            outcomes["terminated" if g_terminated else "truncated"] += 1
            state, episode = None, episode + 1
    assert reset._cache_size() == 1 and step._cache_size() == 1  # limits changed as data
    return outcomes


@pytest.mark.parametrize("env_id", list(CASES))
def test_dynamics_match_gymnasium(env_id):
    outcomes = _run_side_by_side(env_id, *CASES[env_id])
    assert outcomes["truncated"] >= 1, outcomes
    if env_id != "Pendulum-v1":  # Pendulum never terminates
        assert outcomes["terminated"] >= 1, outcomes


@pytest.mark.parametrize("env_id", list(CASES))
def test_default_episode_limits_match_gymnasium(env_id):
    env = rollax.make(env_id)
    assert int(env.default_params.max_episode_steps) == gymnasium.spec(env_id).max_episode_steps


@pytest.mark.parametrize("env_id", list(CASES))
def test_spaces_match_gymnasium(env_id):
    env = rollax.make(env_id)
    gym_env = gymnasium.make(env_id)
    ours, theirs = env.observation_space, gym_env.observation_space
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(ours.low, theirs.low)
    np.testing.assert_allclose(ours.high, theirs.high)
    ours, theirs = env.action_space, gym_env.action_space
    if isinstance(theirs, gymnasium.spaces.Discrete):
        assert isinstance(ours, rollax.spaces.Discrete) and ours.n == theirs.n
    else:
        assert ours.shape == theirs.shape
        np.testing.assert_allclose(ours.low, theirs.low)
        np.testing.assert_allclose(ours.high, theirs.high)
