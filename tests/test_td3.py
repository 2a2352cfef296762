"""TD3: target smoothing, the clipped double-Q target and the C51 projection against
step-by-step references, the truncation probe's infinite-horizon value (scalar and
distributional critics), delayed actor updates, correlated exploration and its bit-identical
resume, Pendulum, bad input."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from _exploration import assert_red_noise, assert_resume_is_bit_identical, run_and_record_noise
from rollax.agents._distributional import Support
from rollax.agents.td3 import PRESETS, TD3Config, make_td3, smoothed_action, td3_target
from rollax.envs import VecEnv
from rollax.envs.probes import Probe, ProbeParams
from rollax.ops import categorical_projection


def test_smoothed_action_and_target_against_hand_computed_values():
    # Noise in half ranges (1 and 2 here), clipped to +-0.5 before scaling, then the action
    # clipped to its box.
    action = jnp.asarray([[0.9, -0.2], [0.0, 0.0]])
    noise = jnp.asarray([[1.0, -4.0], [-1.0, 2.0]])
    low, high = jnp.asarray([-1.0, -2.0]), jnp.asarray([1.0, 2.0])
    got = smoothed_action(action, noise, 0.2, 0.5, low, high)
    np.testing.assert_allclose(got, [[1.0, -1.2], [-0.2, 0.8]], rtol=1e-6)
    # The smaller critic, discounted as the n-step return says (0 after a termination).
    next_q = jnp.asarray([[3.0, 5.0], [4.0, 1.0]])
    target = td3_target(jnp.asarray([1.0, 2.0]), jnp.asarray([0.9, 0.0]), next_q)
    np.testing.assert_allclose(target, [1.0 + 0.9 * 3.0, 2.0], rtol=1e-6)


def _projection_reference(probs, support, reward, discount):
    """C51's projection atom by atom, as Bellemare et al. (2017) write it."""
    v_min, v_max = support[0], support[-1]
    dz = (v_max - v_min) / (len(support) - 1)
    out = np.zeros_like(probs)
    for b in range(probs.shape[0]):
        for j, z in enumerate(support):
            tz = min(max(reward[b] + discount[b] * z, v_min), v_max)
            pos = (tz - v_min) / dz
            low, up = int(np.floor(pos)), int(np.ceil(pos))
            if low == up:
                out[b, low] += probs[b, j]
            else:
                out[b, low] += probs[b, j] * (up - pos)
                out[b, up] += probs[b, j] * (pos - low)
    return out


def test_the_c51_projection_matches_a_step_by_step_reference():
    support = np.linspace(-2.0, 2.0, 5)  # spacing 1
    probs = np.random.default_rng(0).dirichlet(np.ones(5), size=4)
    # Between atoms, on an atom, a termination (all at r), clipped at both edges.
    reward, discount = np.array([0.3, 1.0, 0.5, -3.0]), np.array([0.9, 1.0, 0.0, 0.5])
    got = categorical_projection(*map(jnp.asarray, (probs, support, reward, discount)))
    want = _projection_reference(probs, support, reward, discount)
    np.testing.assert_allclose(got, want, atol=1e-6)
    np.testing.assert_allclose(np.asarray(got).sum(axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(got[2], [0, 0, 0.5, 0.5, 0], atol=1e-6)  # r = 0.5, no bootstrap


def test_the_distributional_target_projects_the_twin_that_expects_less():
    support = Support.of(-2.0, 2.0, 5)
    logits = jnp.asarray(np.random.default_rng(1).normal(size=(2, 3, 5)), jnp.float32)
    target = support.double_q_target(logits, jnp.asarray([0.5, 0.0, 1.0]), jnp.full(3, 0.9))
    values = np.asarray(support.value(logits))
    probs = np.asarray(jax.nn.softmax(logits))
    chosen = probs[values.argmin(axis=0), np.arange(3)]
    want = _projection_reference(chosen, np.asarray(support.atoms), [0.5, 0.0, 1.0], [0.9] * 3)
    np.testing.assert_allclose(target, want, atol=1e-6)


PROBE = TD3Config(
    num_envs=4, total_steps=8_000, buffer_size=2_000, learning_starts=200, batch_size=64,
    learning_rate=3e-3, gamma=0.9, hidden_sizes=(32,), normalize_obs=False,
)  # fmt: skip


def _q(agent, state, obs, action):
    """Both critics of seed 0 for one observation and action: (2,)."""
    obs = jnp.asarray(obs, jnp.float32).reshape(1, 1, -1)
    action = jnp.asarray(action, jnp.float32).reshape(1, 1, -1)
    return np.asarray(agent.q_values(state, obs, action))[0, :, 0]


@pytest.mark.parametrize(
    ("num_atoms", "n_step"), [(0, 1), (51, 1), (0, 3)], ids=["scalar", "c51", "3-step"]
)
def test_td3_bootstraps_through_truncation_to_the_infinite_horizon_value(num_atoms, n_step):
    # Reward 1 forever, cut every 5 steps; the observation does not show time. The value is
    # 1 / (1 - 0.9) = 10 only for a learner that bootstraps through the cut (with 3-step
    # windows too, which cut at the episode's end and bootstrap from its final observation).
    config = PROBE.replace(num_atoms=num_atoms, v_min=0.0, v_max=20.0, n_step=n_step)
    env = VecEnv(Probe("truncation", continuous=True), config.num_envs)
    agent = make_td3(config, env)
    state = agent.init(jax.random.key(0), env_params=ProbeParams(max_episode_steps=np.int32(5)))
    state, metrics = agent.run(state, config.total_steps)
    assert bool(np.asarray(metrics["finite"]).all())
    q = _q(agent, state, [0.0], [0.0])
    assert np.abs(q - 10.0).max() <= 0.5, q


def test_the_actor_and_the_targets_move_every_policy_delay_steps():
    config = PROBE.replace(total_steps=8, learning_starts=4, policy_delay=2, batch_size=8)
    agent = make_td3(config, VecEnv(Probe("action", continuous=True), config.num_envs))
    state = agent.init(jax.random.key(1))
    state, _ = agent.run(state, 4)  # one learning phase: the first critic step
    first = state.learner
    state, _ = agent.run(state, 4)  # the second: the actor and the targets move
    second = state.learner
    assert int(first.steps[0]) == 1 and int(second.steps[0]) == 2

    def same(a, b):
        pairs = zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True)
        return all(np.array_equal(x, y) for x, y in pairs)

    start = agent.init(jax.random.key(1)).learner
    assert not same(first.params["critic"], start.params["critic"])
    assert same(first.params["actor"], start.params["actor"]) and same(first.target, start.target)
    assert not same(second.params["actor"], first.params["actor"])
    assert not same(second.target, first.target)


def test_correlated_exploration_moves_the_actor_s_actions_by_red_noise():
    # exploration_correlation: the actor acts from the first step, moved by noise of
    # exploration_noise half ranges that follows an AR(1) process with a standard normal
    # marginal. No learning here (learning_starts beyond the budget): the actor is fixed,
    # and each stored action is its action plus the noise the state held after that step.
    config = PROBE.replace(
        num_envs=64, total_steps=64 * 40, buffer_size=64 * 48, learning_starts=64 * 48,
        exploration_noise=0.1, exploration_correlation=0.9,
    )  # fmt: skip
    env = VecEnv(Probe("action", continuous=True), config.num_envs)
    agent = make_td3(config, env)
    state = agent.init(jax.random.key(0))
    obs = jax.tree.map(lambda x: x[None], state.obs[0, 0])  # one seed's observations
    actor_action = np.asarray(agent.policy.act(state, obs, (), None, jax.random.key(0), True)[0])
    state, noise = run_and_record_noise(agent, state, 40)  # noise: (steps, envs)
    assert_red_noise(noise, 0.9)
    stored = np.asarray(state.buffer.data.action[0, 0, :, :40, 0]).T  # (steps, envs)
    low, high = env.action_space.low, env.action_space.high
    expected = np.clip(actor_action[0, :, 0] + noise * 0.1 * 0.5 * (high - low), low, high)
    np.testing.assert_allclose(stored, expected, atol=1e-6)
    probe = VecEnv(Probe("action", continuous=True), PROBE.num_envs)
    assert make_td3(PROBE, probe).init(jax.random.key(0)).exploration is None
    with pytest.raises(ValueError, match=r"exploration_correlation=1.0 must lie in \[0, 1\)"):
        make_td3(PROBE.replace(exploration_correlation=1.0), "Pendulum-v1")


def test_resume_with_correlated_exploration_is_bit_identical(tmp_path):
    # The red noise is in the state, so a resumed run moves its actions by the noise it had.
    config = PROBE.replace(
        num_seeds=2, total_steps=600, learning_starts=100, exploration_correlation=0.9
    )
    assert_resume_is_bit_identical(
        make_td3(config, "Pendulum-v1"), jax.random.key(4), 600, tmp_path
    )


@pytest.mark.slow
def test_td3_solves_pendulum_with_its_preset_on_most_seeds():
    config = PRESETS["Pendulum-v1"].replace(num_seeds=3)
    agent = make_td3(config, "Pendulum-v1")
    state, _ = agent.run(agent.init(jax.random.key(0)), config.total_steps)
    returns = np.asarray(agent.evaluate(state, jax.random.key(1), num_episodes=16)).mean(axis=1)
    assert (returns >= -250).sum() >= 2, returns


def test_bad_input_is_refused_before_anything_compiles():
    with pytest.raises(ValueError, match="TD3 acts in a 1-D box of continuous actions"):
        make_td3(TD3Config(), "CartPole-v1")
    with pytest.raises(ValueError, match=r"TD3Config\.policy_delay must be a positive integer"):
        make_td3(TD3Config(policy_delay=0), "Pendulum-v1")
    with pytest.raises(ValueError, match=r"TD3Config\.noise_clip must be >= 0"):
        make_td3(TD3Config(noise_clip=-1.0), "Pendulum-v1")
    with pytest.raises(ValueError, match=r"TD3Config\.num_atoms=1 must be 0"):
        make_td3(TD3Config(num_atoms=1), "Pendulum-v1")
