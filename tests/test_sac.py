"""SAC: its losses and squashed Gaussian by hand, probe environments with known values
(truncation included), Pendulum, bit-identical resume with the replay buffer, bad input."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats

from _exploration import assert_red_noise, assert_resume_is_bit_identical, run_and_record_noise
from rollax.agents.losses import twin_critic_loss
from rollax.agents.sac import (
    SACConfig,
    make_sac,
    sac_actor_loss,
    sac_alpha_loss,
    soft_target,
)
from rollax.envs import VecEnv
from rollax.envs.probes import Probe, ProbeParams
from rollax.networks import TanhGaussian

PROBE = SACConfig(
    num_envs=4,
    total_steps=2_000,
    buffer_size=2_000,
    learning_starts=200,
    batch_size=64,
    learning_rate=3e-3,
    gamma=0.9,
    tau=0.05,
    init_alpha=1e-3,
    autotune_alpha=False,
    hidden_sizes=(32, 32),
    normalize_obs=False,
)


def test_losses_against_hand_computed_values():
    reward = jnp.asarray([1.0, 2.0])
    discount = jnp.asarray([0.9, 0.0])  # the second window terminated
    next_q = jnp.asarray([[3.0, 5.0], [4.0, 1.0]])  # min over critics: 3 and 1
    next_log_prob = jnp.asarray([-1.0, 0.5])
    target = soft_target(reward, discount, next_q, next_log_prob, alpha=0.2)
    np.testing.assert_allclose(target, [1.0 + 0.9 * (3.0 + 0.2), 2.0], rtol=1e-6)
    q = jnp.asarray([[4.0, 2.0], [3.0, 1.0]])
    # Critic 1 errors 0.12, 0 -> 0.0072; critic 2 errors -0.88, -1 -> 0.8872; halved.
    expected = 0.5 * ((0.12**2 + 0.0) / 2 + (0.88**2 + 1.0) / 2)
    np.testing.assert_allclose(twin_critic_loss(q, target), expected, rtol=1e-5)
    log_prob = jnp.asarray([-1.0, -2.0])
    np.testing.assert_allclose(
        sac_actor_loss(q, log_prob, 0.5), ((0.5 * -1.0 - 3.0) + (0.5 * -2.0 - 1.0)) / 2
    )
    # Entropy 1.5 above a target of -1: the loss's gradient lowers log alpha.
    grad = jax.grad(sac_alpha_loss)(jnp.asarray(0.0), log_prob, -1.0)
    np.testing.assert_allclose(grad, -((-1.0 - 1.0) + (-2.0 - 1.0)) / 2)
    assert float(grad) > 0


def test_tanh_gaussian_density_by_change_of_variables():
    mean = jnp.asarray([[0.3, -1.0], [2.5, 0.0]])
    log_std = jnp.asarray([[-0.5, 0.2], [0.1, -1.0]])
    low, high = jnp.asarray([-2.0, 0.0]), jnp.asarray([2.0, 1.0])
    dist = TanhGaussian(mean, log_std, low, high)
    action, log_prob = dist.sample_and_log_prob(jax.random.key(0))
    assert (
        (np.asarray(action) >= np.asarray(low)) & (np.asarray(action) <= np.asarray(high))
    ).all()
    # Invert the squashing and apply the change of variables in float64.
    a = np.asarray(action, np.float64)
    lo, hi = np.asarray(low, np.float64), np.asarray(high, np.float64)
    y = np.clip(2 * (a - lo) / (hi - lo) - 1, -1 + 1e-12, 1 - 1e-12)
    u = np.arctanh(y)
    density = scipy.stats.norm(np.asarray(mean), np.exp(np.asarray(log_std))).logpdf(u)
    jacobian = np.log((hi - lo) / 2) + np.log(1 - y**2)
    np.testing.assert_allclose(log_prob, (density - jacobian).sum(-1), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dist.mode(), lo + (np.tanh(np.asarray(mean)) + 1) * (hi - lo) / 2,
                               rtol=1e-6)  # fmt: skip
    # Far in the tails tanh rounds to 1; the log-density stays finite.
    far = TanhGaussian(jnp.full((1, 2), 30.0), jnp.full((1, 2), -5.0), low, high)
    assert np.isfinite(np.asarray(far.sample_and_log_prob(jax.random.key(1))[1])).all()


def _train_on(probe, config=PROBE, params=None):
    env = VecEnv(probe, config.num_seeds * config.num_envs)
    agent = make_sac(config, env)
    state = agent.init(jax.random.key(0), env_params=params)
    state, metrics = agent.run(state, config.total_steps)
    assert bool(np.asarray(metrics["finite"]).all())
    return agent, state


def _q(agent, state, obs, action):
    """Both critics' values for 1-D observations and actions, seed 0: (2, B)."""
    obs = jnp.asarray(obs, jnp.float32).reshape(1, -1, 1)
    action = jnp.asarray(action, jnp.float32).reshape(1, -1, 1)
    return np.asarray(agent.q_values(state, obs, action))[0]


@pytest.mark.parametrize(
    ("kind", "obs", "expected"),
    [
        ("one_step", [0.0], [1.0]),
        ("observation", [1.0, -1.0], [1.0, -1.0]),
        ("delayed", [0.0, 1.0], [0.9, 1.0]),
    ],
)
def test_sac_learns_the_known_values_of_probe_environments(kind, obs, expected):
    agent, state = _train_on(Probe(kind, continuous=True))
    _assert_values_of_the_greedy_actions(agent, state, obs, expected)


def _assert_values_of_the_greedy_actions(agent, state, obs, expected):
    """Both critics value the policy's mode at each of ``obs`` as ``expected``, to 0.1."""
    action = np.asarray(agent.policy.act(state, jnp.asarray(obs, jnp.float32).reshape(1, -1, 1),
                                         (), None, jax.random.key(0), True)[0])  # fmt: skip
    q = _q(agent, state, obs, action[0])
    np.testing.assert_allclose(q, np.broadcast_to(expected, q.shape), atol=0.1)


def _has_layer_norm(params) -> bool:
    return any("LayerNorm" in jax.tree_util.keystr(path) for path, _ in
               jax.tree_util.tree_leaves_with_path(params))  # fmt: skip


def test_critic_layer_norm_normalizes_the_critics_alone_and_learns_the_probe_values():
    normed = PROBE.replace(critic_layer_norm=True)
    agent, state = _train_on(Probe("delayed", continuous=True), normed)
    params = state.learner.params
    assert _has_layer_norm(params["critic"]) and _has_layer_norm(state.learner.target_critic)
    assert not _has_layer_norm(params["actor"])
    _assert_values_of_the_greedy_actions(agent, state, [0.0, 1.0], [0.9, 1.0])


def test_sac_learns_an_action_dependent_reward():
    # Reward a in [-1, 1]: the best action is 1, and Q(0, a) = a.
    agent, state = _train_on(Probe("action", continuous=True))
    obs = jnp.zeros((1, 1, 1), jnp.float32)
    best = float(agent.policy.act(state, obs, (), None, jax.random.key(0), True)[0][0, 0, 0])
    assert best > 0.9, best
    np.testing.assert_allclose(_q(agent, state, [0.0], [best]), best, atol=0.1)


def test_sac_bootstraps_through_truncation_to_the_infinite_horizon_value():
    params = ProbeParams(max_episode_steps=np.int32(5))
    agent, state = _train_on(Probe("truncation", continuous=True), PROBE.replace(total_steps=4_000),
                             params)  # fmt: skip
    q = _q(agent, state, [0.0], [0.0])
    np.testing.assert_allclose(q, 10.0, rtol=0.1)


@pytest.mark.parametrize("correlation", [0.0, 0.9], ids=["white", "correlated"])
def test_resume_with_the_buffer_is_bit_identical(tmp_path, correlation):
    # Correlated exploration keeps its noise in the state: it resumes where it stopped.
    config = PROBE.replace(
        num_seeds=2, total_steps=600, learning_starts=100, exploration_correlation=correlation
    )
    agent = make_sac(config, "Pendulum-v1")
    assert_resume_is_bit_identical(agent, jax.random.key(4), 600, tmp_path)


def test_bad_input_is_refused_before_compiling():
    with pytest.raises(ValueError, match="SAC acts in a 1-D box of continuous actions; CartPole"):
        make_sac(PROBE, "CartPole-v1")
    with pytest.raises(ValueError, match=r"SACConfig.tau must lie in \(0, 1\], got 2.0"):
        make_sac(PROBE.replace(tau=2.0), "Pendulum-v1")
    with pytest.raises(ValueError, match=r"batch_size=4000 exceeds buffer_size=2000"):
        make_sac(PROBE.replace(batch_size=4000), "Pendulum-v1")


def test_correlated_exploration_keeps_the_policy_distribution_and_persists():
    # An AR(1) noise process with a standard normal marginal: each step's action is drawn
    # from the policy's own distribution, but successive draws are correlated.
    config = PROBE.replace(
        num_envs=64, total_steps=2048, buffer_size=2048, exploration_correlation=0.9
    )
    agent = make_sac(config, "Pendulum-v1")
    _, noise = run_and_record_noise(agent, agent.init(jax.random.key(0)), 40)
    assert_red_noise(noise, 0.9)
    assert make_sac(PROBE, "Pendulum-v1").init(jax.random.key(0)).exploration is None
    with pytest.raises(ValueError, match=r"exploration_correlation=1.0 must lie in \[0, 1\)"):
        make_sac(PROBE.replace(exploration_correlation=1.0), "Pendulum-v1")


@pytest.mark.slow
def test_sac_solves_mountain_car_with_correlated_exploration():
    from rollax.agents.sac import PRESETS

    # The preset explores with noise correlated over time; with independent noise (the
    # standard) both seeds learn to stand still, returning about 0. A seed may still miss the
    # goal within 15,000 steps when floats sum in another order: 3 seeds here gave 92.9,
    # -52.1, 93.9 with the suite's XLA flags on jaxlib 0.10 (without the older fusion
    # emitters, 4 seeds gave 92.9, 92.8, 93.4, 90.6), so 2 of 3 must reach 90.
    config = PRESETS["MountainCarContinuous-v0"].replace(num_seeds=3, total_steps=15_000)
    agent = make_sac(config, "MountainCarContinuous-v0")
    state, _ = agent.run(agent.init(jax.random.key(0)), config.total_steps)
    returns = np.asarray(agent.evaluate(state, jax.random.key(1), num_episodes=8)).mean(axis=1)
    assert (returns >= 90).sum() >= 2, returns


@pytest.mark.slow
def test_sac_solves_pendulum_with_its_preset():
    from rollax.agents.sac import PRESETS

    config = PRESETS["Pendulum-v1"].replace(num_seeds=2)
    agent = make_sac(config, "Pendulum-v1")
    state = agent.init(jax.random.key(0))
    state, _ = agent.run(state, config.total_steps)
    returns = np.asarray(agent.evaluate(state, jax.random.key(1), num_episodes=16))
    assert returns.mean(axis=1).min() >= -250, returns.mean(axis=1)
