"""DQN: its loss and targets by hand, probe environments with known values (truncation
included), CartPole, bit-identical resume with the replay buffer, one compile, bad input."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import rollax
from rollax.agents.dqn import DQNConfig, make_dqn
from rollax.agents.losses import next_state_value, q_learning_loss
from rollax.checkpoints import Checkpointer
from rollax.envs import VecEnv
from rollax.envs.probes import Probe, ProbeParams

PROBE = DQNConfig(
    num_envs=4,
    total_steps=3_000,
    buffer_size=2_000,
    learning_starts=200,
    batch_size=64,
    gradient_steps=1,
    target_update_every=1,
    tau=0.05,
    exploration_fraction=0.3,
    learning_rate=3e-3,
    gamma=0.9,
    hidden_sizes=(32,),
    dueling=False,
)


def test_next_state_value_and_loss_against_hand_computed_values():
    online = jnp.asarray([[1.0, 3.0, 2.0], [0.0, -1.0, 5.0]])
    target = jnp.asarray([[10.0, 20.0, 30.0], [40.0, 50.0, 60.0]])
    # Double DQN: the online network picks actions 1 and 2, the target values them.
    np.testing.assert_array_equal(next_state_value(online, target, double_q=True), [20.0, 60.0])
    np.testing.assert_array_equal(next_state_value(online, target, double_q=False), [30.0, 60.0])

    q = jnp.asarray([[1.0, 2.0], [0.5, -1.0], [3.0, 0.0]])
    action = jnp.asarray([1, 0, 0])
    targets = jnp.asarray([2.5, 3.5, 3.0])  # errors 0.5, 3.0 and 0.0
    loss, td = q_learning_loss(q, action, targets, loss="mse")
    np.testing.assert_allclose(td, [0.5, 3.0, 0.0])
    np.testing.assert_allclose(loss, (0.5 * 0.25 + 0.5 * 9.0 + 0.0) / 3, rtol=1e-6)
    loss, _ = q_learning_loss(q, action, targets, loss="huber")
    np.testing.assert_allclose(loss, (0.5 * 0.25 + (3.0 - 0.5) + 0.0) / 3, rtol=1e-6)
    weight = jnp.asarray([2.0, 0.0, 1.0])
    loss, _ = q_learning_loss(q, action, targets, weight, loss="mse")
    np.testing.assert_allclose(loss, (2.0 * 0.125) / 3, rtol=1e-6)
    # Gradients reach Q(s, a) of the taken actions only, never the targets.
    grad = jax.grad(lambda q: q_learning_loss(q, action, targets, loss="mse")[0])(q)
    np.testing.assert_allclose(grad, [[0.0, -0.5 / 3], [-3.0 / 3, 0.0], [0.0, 0.0]], rtol=1e-6)


def _train_on(probe, config=PROBE, params=None, steps=None):
    env = VecEnv(probe, config.num_seeds * config.num_envs)
    agent = make_dqn(config, env)
    state = agent.init(jax.random.key(0), env_params=params)
    state, metrics = agent.run(state, steps or config.total_steps)
    assert bool(np.asarray(metrics["finite"]).all())
    return agent, state


def _q(agent, state, obs):
    """Q-values of seed 0 for a batch of 1-D observations: (B, 2)."""
    obs = jnp.asarray(obs, jnp.float32).reshape(1, -1, 1)
    return np.asarray(agent.q_values(state, obs))[0]


@pytest.mark.parametrize(
    ("kind", "obs", "expected"),
    [
        ("one_step", [0.0], [[1.0, 1.0]]),
        ("observation", [1.0, -1.0], [[1.0, 1.0], [-1.0, -1.0]]),
        ("delayed", [0.0, 1.0], [[0.9, 0.9], [1.0, 1.0]]),
        ("action", [0.0], [[-1.0, 1.0]]),
    ],
)
def test_dqn_learns_the_known_values_of_probe_environments(kind, obs, expected):
    agent, state = _train_on(Probe(kind))
    np.testing.assert_allclose(_q(agent, state, obs), expected, atol=0.1)


class _TimeLimitAsTermination(Probe):
    """The truncation probe, but its 5-step limit is reported as a termination."""

    def step_env(self, state, action, params):
        state, reward, _ = super().step_env(state, action, params)
        return state, reward, state.t >= 5


def test_dqn_bootstraps_through_truncation_to_the_infinite_horizon_value():
    # Reward 1 forever, cut every 5 steps; the observation does not show time. The value is
    # 1 / (1 - 0.9) = 10 only for a learner that bootstraps through the cut.
    params = ProbeParams(max_episode_steps=np.int32(5))
    config = PROBE.replace(total_steps=6_000)
    agent, state = _train_on(Probe("truncation"), config, params)
    value = _q(agent, state, [0.0]).max()
    assert abs(value - 10.0) <= 1.0, value
    # Treated as termination, the same agent settles where Q = 1 + 0.9 * (4 / 5) * Q: one
    # step in five (the cut) looks terminal from the same observation, so Q = 3.57.
    wrong = _TimeLimitAsTermination("truncation")
    agent, state = _train_on(wrong, config, params.replace(max_episode_steps=np.int32(1000)))
    terminated_value = _q(agent, state, [0.0]).max()
    print(f"truncation probe: bootstrapped {value:.2f}, as termination {terminated_value:.2f}")
    assert abs(terminated_value - 3.57) <= 0.5, terminated_value


def test_resume_with_the_buffer_is_bit_identical(tmp_path):
    config = PROBE.replace(num_seeds=2, total_steps=800, learning_starts=100, prioritized=True)
    agent = make_dqn(config, "CartPole-v1")
    start = agent.init(jax.random.key(4))
    whole, _ = agent.run(start, 800)
    half, _ = agent.run(start, 400)
    _, m_second_half = agent.run(half, 400)
    checkpoints = Checkpointer(tmp_path / "checkpoints")
    checkpoints.save(400, half, {})
    restored, _ = checkpoints.restore(jax.eval_shape(agent.init, jax.random.key(0)))
    resumed, m_resumed = agent.run(restored, 400)
    for a, b in zip(jax.tree.leaves(whole), jax.tree.leaves(resumed), strict=True):
        if jax.dtypes.issubdtype(a.dtype, jax.dtypes.prng_key):
            a, b = jax.random.key_data(a), jax.random.key_data(b)
        np.testing.assert_array_equal(a, b)
    assert int(whole.buffer.steps[0, 0]) == 800 // config.num_envs  # the buffer went on too
    np.testing.assert_array_equal(m_second_half["td_loss"], m_resumed["td_loss"])


def test_compact_replay_trains_bit_identically_through_truncations():
    # Episodes cut every 10 steps: every tenth target bootstraps from a final observation
    # that the compact buffer keeps on the side. Same draws, same batches, same bits.
    config = PROBE.replace(buffer_size=4_000, learning_starts=100, n_step=3)
    states = []
    for compact in (False, True):
        agent = make_dqn(config.replace(compact_replay=compact), "CartPole-v1")
        state = agent.init(jax.random.key(1))
        state = state.replace(env_params=state.env_params.replace(max_episode_steps=10))
        state, _ = agent.run(state, 400)
        states.append(state)
    full, compact = states
    assert int(full.buffer.data.truncated.sum()) >= 30
    assert compact.buffer.data.next_obs is None  # stored once
    jax.tree.map(np.testing.assert_array_equal, full.learner.params, compact.learner.params)


def test_run_compiles_once_and_budgets_are_exact():
    compiled = []

    def on_event(name, seconds, fun_name="", **kwargs):
        if "backend_compile" in name and fun_name == "jit(run_iterations)":
            compiled.append(fun_name)

    jax.monitoring.register_event_duration_secs_listener(on_event)
    agent = make_dqn(PROBE, "CartPole-v1")
    state = agent.init(jax.random.key(0))
    state, _ = agent.run(state, 40)
    state, _ = agent.run(state, 400)
    state = state.replace(env_params=state.env_params.replace(max_episode_steps=50))
    state, metrics = agent.run(state, 8)
    assert int(metrics["env_steps"]) == 448 and int(state.env_steps) == 448
    assert len(compiled) == 1
    with pytest.raises(ValueError, match=r"num_steps=10 is not a whole number .* use 8 or 12"):
        agent.run(state, 10)


def test_bad_input_is_refused_before_compiling():
    with pytest.raises(ValueError, match="DQN chooses among discrete actions; Pendulum-v1"):
        make_dqn(PROBE, "Pendulum-v1")
    with pytest.raises(ValueError, match=r"buffer_size=2001 must be a multiple of num_envs=4"):
        make_dqn(PROBE.replace(buffer_size=2001), "CartPole-v1")
    with pytest.raises(ValueError, match=r"DQNConfig.gamma must lie in \[0, 1\], got 1.5"):
        make_dqn(PROBE.replace(gamma=1.5), "CartPole-v1")
    with pytest.raises(ValueError, match=r"DQNConfig.n_step must be a positive integer, got 0"):
        make_dqn(PROBE.replace(n_step=0), "CartPole-v1")
    with pytest.raises(ValueError, match=r"total_steps=3001 is not a whole number"):
        make_dqn(PROBE.replace(total_steps=3001), "CartPole-v1")
    with pytest.raises(ValueError, match="needs same-step autoreset"):
        make_dqn(PROBE, rollax.make("CartPole-v1", num_envs=4, autoreset_mode="next_step"))


@pytest.mark.slow
def test_dqn_solves_cartpole_with_its_preset():
    from rollax.agents.dqn import PRESETS

    config = PRESETS["CartPole-v1"].replace(num_seeds=2)
    agent = make_dqn(config, "CartPole-v1")
    state = agent.init(jax.random.key(0))
    state, _ = agent.run(state, config.total_steps)
    returns = np.asarray(agent.evaluate(state, jax.random.key(1), num_episodes=32))
    assert returns.mean(axis=1).min() >= 475, returns.mean(axis=1)


def test_checkpoints_can_leave_the_buffer_out_and_resume_refills_it(tmp_path):
    config = PROBE.replace(total_steps=800, learning_starts=200, checkpoint_buffer=False)
    agent = make_dqn(config, "CartPole-v1")
    state, _ = agent.run(agent.init(jax.random.key(0)), 400)
    checkpoints = Checkpointer(tmp_path / "checkpoints")
    checkpoints.save(400, agent.to_checkpoint(state), {})
    template = jax.eval_shape(lambda k: agent.to_checkpoint(agent.init(k)), jax.random.key(0))
    restored = agent.from_checkpoint(checkpoints.restore(template)[0])
    assert int(restored.buffer.steps[0, 0]) == 0  # the buffer starts empty ...
    for a, b in zip(jax.tree.leaves(state.learner), jax.tree.leaves(restored.learner), strict=True):
        np.testing.assert_array_equal(a, b)  # ... and everything else is restored
    # Learning pauses until learning_starts transitions are stored again: 50 vectorized
    # steps of 4 environments, the last of which learns once.
    resumed, _ = agent.run(restored, 200)
    assert int(resumed.updates) == int(state.updates) + 1


@pytest.mark.parametrize("prioritized", [False, True])
def test_acting_and_learning_called_apart_make_the_loop_s_iteration(prioritized):
    # The off-policy driver's pieces on one seed's shard: train_every steps of acting and
    # storing, then a learning phase from the replay, are the loop's iteration. Keys,
    # environments and the replay (priorities too) agree to the bit; the learner's
    # parameters to a float's last bit (each program is fused its own way by XLA).
    from _shards import assert_same_bits
    from rollax._compile import FastCompile
    from rollax.agents import offpolicy

    config = DQNConfig(num_envs=4, train_every=2, gradient_steps=3, learning_starts=8,
                       batch_size=8, buffer_size=256, hidden_sizes=(16,),
                       prioritized=prioritized)  # fmt: skip
    agent = make_dqn(config, "CartPole-v1")
    start = agent.init(jax.random.key(0))

    def apart(state):
        for _ in range(config.train_every):
            state, _ = offpolicy.act_and_store(agent.driver, state)
        learner, replay, key, metrics = offpolicy.learn_from_replay(agent.driver, state)
        return state.replace(learner=learner, buffer=replay, key=key), metrics

    state, metrics = FastCompile(apart, 1)(agent.shard_state(start))
    looped, _ = agent.run(start, config.steps_per_iteration)
    expected = agent.shard_state(looped)
    assert_same_bits((state.key, state.env_state, state.obs, state.buffer),
                     (expected.key, expected.env_state, expected.obs, expected.buffer))  # fmt: skip
    assert_same_bits(state.learner.params, expected.learner.params, rtol=1e-5, atol=1e-7)
    assert set(metrics) == set(agent.metric_names)
    assert not np.allclose(jax.tree.leaves(state.learner.params)[0],
                           jax.tree.leaves(agent.shard_state(start).learner.params)[0])  # fmt: skip
