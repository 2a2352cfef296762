"""Action repeat renders once per agent step; frame stacks keep order and reset cleanly."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import rollax
from rollax.envs import VecEnv
from rollax.envs.classic.cartpole import CartPole
from rollax.envs.pixel_cartpole import PixelCartPole
from rollax.envs.wrappers import ActionRepeat, FrameStack


class CountingCartPole(CartPole):
    """CartPole that counts, at run time, how many observations and dynamics steps run."""

    def __init__(self):
        self.counts = {"observe": 0, "step": 0}

    def _count(self, what, x):
        def bump(x):
            self.counts[what] += int(np.size(x))

        jax.debug.callback(bump, x)

    def step_env(self, state, action, params):
        self._count("step", state.x)
        return super().step_env(state, action, params)

    def observe(self, state, params):
        self._count("observe", state.x)
        return super().observe(state, params)


@pytest.mark.parametrize("wrap", ["repeat", "stack_of_repeat"])
def test_action_repeat_renders_once_per_agent_step(wrap):
    inner = CountingCartPole()
    env = ActionRepeat(inner, 4)
    if wrap == "stack_of_repeat":
        env = FrameStack(env, 3)
    vec = VecEnv(env, num_envs=3, autoreset_mode="disabled")
    step = jax.jit(vec.step)
    state, _ = vec.reset(jax.random.key(0))
    jax.effects_barrier()
    assert inner.counts == {"observe": 3, "step": 0}  # one first observation each
    for _ in range(5):
        state, ts = step(state, jnp.zeros(3, jnp.int32))
    jax.block_until_ready(ts)
    jax.effects_barrier()
    assert inner.counts["step"] == 3 * 5 * 4  # the dynamics ran 4 times per agent step
    assert inner.counts["observe"] == 3 + 3 * 5  # and rendered once


def test_action_repeat_equals_repeated_steps_and_stops_at_termination():
    base = CartPole()
    params = base.default_params
    stopped_mid_repeat = False
    for repeat in (3, 4, 5, 7):
        env = ActionRepeat(base, repeat)
        s_ref = s_rep = base.reset_env(jax.random.key(0), params)
        for _ in range(40):
            s_rep, r_rep, term_rep = env.step_env(s_rep, jnp.int32(1), params)
            reward, terminated = 0.0, False
            for _ in range(repeat):
                if not terminated:
                    s_ref, r, term = base.step_env(s_ref, jnp.int32(1), params)
                    reward += float(r)
                    terminated = bool(term)
            np.testing.assert_allclose(
                base.observe(s_rep, params), base.observe(s_ref, params), rtol=1e-5, atol=1e-6
            )
            assert float(r_rep) == reward and bool(term_rep) == terminated
            if terminated:
                break
        assert terminated
        stopped_mid_repeat |= reward < repeat  # no reward after the terminal repeat
    assert stopped_mid_repeat


def _episode(env, params=None):
    """One episode of zero actions on 2 environments: (agent steps to truncation, returns)."""
    state, _ = env.reset(jax.random.key(3), params)
    step = jax.jit(env.step)
    returns = np.zeros(2)
    for t in range(1, 1_000):
        state, ts = step(state, jnp.zeros((2, 1)), params)
        returns += np.asarray(ts.reward)
        if np.asarray(ts.done).any():
            assert np.asarray(ts.truncated).all() and not np.asarray(ts.terminated).any()
            return t, returns
    raise AssertionError("no episode ended")


def test_action_repeat_keeps_an_episode_as_long_in_dynamics_steps():
    # Pendulum's 200 steps: 50 agent steps of 4, 67 of 3 (201 dynamics steps, as Brax's
    # EpisodeWrapper rounds), and the same return over the same 200 dynamics steps.
    steps, plain = _episode(rollax.make("Pendulum-v1", num_envs=2))
    assert steps == 200
    steps, repeated = _episode(rollax.make("Pendulum-v1", num_envs=2, action_repeat=4))
    assert steps == 50
    np.testing.assert_allclose(repeated, plain, rtol=1e-5)
    assert _episode(rollax.make("Pendulum-v1", num_envs=2, action_repeat=3))[0] == 67
    # A limit given in the params counts agent steps, as given.
    env = rollax.make("Pendulum-v1", num_envs=2, action_repeat=4)
    assert _episode(env, env.default_params.replace(max_episode_steps=30))[0] == 30


def test_frame_stack_keeps_order_and_starts_with_copies():
    k = 3
    stacked = rollax.envs.VecEnv(FrameStack(CartPole(), k), num_envs=2)
    plain = rollax.make("CartPole-v1", num_envs=2)
    assert stacked.observation_space.shape == (12,)
    params = plain.default_params.replace(max_episode_steps=6)
    s_a, ts_a = stacked.reset(jax.random.key(5), params)
    s_b, ts_b = plain.reset(jax.random.key(5), params)
    np.testing.assert_array_equal(ts_a.obs, np.tile(ts_b.obs, (1, k)))  # padded with copies
    history = [ts_b.obs] * k
    ended = False
    for t in range(10):
        action = jnp.full((2,), t % 2, jnp.int32)
        s_a, ts_a = stacked.step(s_a, action, params)
        s_b, ts_b = plain.step(s_b, action, params)
        done = np.asarray(ts_b.done)
        ended |= done.any()
        final = np.concatenate([*history[-(k - 1) :], ts_b.final_obs], axis=-1)
        history = [np.where(done[:, None], ts_b.obs, h) for h in history[-(k - 1) :]]
        history.append(ts_b.obs)
        np.testing.assert_allclose(ts_a.final_obs, final, rtol=1e-6)  # oldest first
        np.testing.assert_allclose(ts_a.obs, np.concatenate(history, axis=-1), rtol=1e-6)
        assert ts_a.truncated.tolist() == ts_b.truncated.tolist()
    assert ended  # the stacks restarted from copies of the new first observation


def test_frame_stack_of_pixels_stacks_channels():
    env = VecEnv(FrameStack(ActionRepeat(PixelCartPole(16, 32, state=True), 2), 4), num_envs=2)
    space = env.observation_space
    assert space["pixels/fixed"].shape == (16, 32, 12) and space["state"].shape == (16,)
    state, ts = env.reset(jax.random.key(0))
    state, ts = env.step(state, jnp.ones(2, jnp.int32))
    assert ts.obs["pixels/fixed"].shape == (2, 16, 32, 12)
    assert ts.obs["pixels/fixed"].dtype == jnp.uint8
    assert env.can_render and env.render(state).shape == (2, 120, 288, 3)


def test_wrapper_arguments_are_checked():
    with pytest.raises(ValueError, match="repeat must be an integer >= 1, got 0"):
        ActionRepeat(CartPole(), 0)
    with pytest.raises(ValueError, match="num_frames must be an integer >= 1"):
        FrameStack(CartPole(), 2.0)
    with pytest.raises(TypeError, match="env must be a rollax Environment"):
        FrameStack(rollax.make("CartPole-v1"), 2)


def test_make_applies_action_repeat_then_frame_stack():
    env = rollax.make("PixelCartPole-v1", num_envs=2, height=16, width=32, action_repeat=2,
                      frame_stack=3)  # fmt: skip
    assert isinstance(env.env, FrameStack) and isinstance(env.env.env, ActionRepeat)
    assert env.env.num_frames == 3 and env.env.env.repeat == 2
    assert env.observation_space["pixels/fixed"].shape == (16, 32, 9)
    assert not isinstance(rollax.make("CartPole-v1").env, (FrameStack, ActionRepeat))
    with pytest.raises(ValueError, match=r"frame_stack must be an integer >= 1, got 0"):
        rollax.make("CartPole-v1", frame_stack=0)
    with pytest.raises(ValueError, match=r"action_repeat must be an integer >= 1, got 1.5"):
        rollax.make("CartPole-v1", action_repeat=1.5)


def test_ppo_builds_its_wrappers_from_an_id_only():
    from rollax.agents.ppo import PPOConfig, make_ppo

    config = PPOConfig(num_envs=2, num_steps=8, total_steps=16, num_minibatches=1, frame_stack=2)
    agent = make_ppo(config, "CartPole-v1")
    assert isinstance(agent.env.env, FrameStack)
    assert agent.env.observation_space.shape == (8,)
    with pytest.raises(ValueError, match="frame_stack=2 and action_repeat=1 apply when env"):
        make_ppo(config, rollax.make("CartPole-v1", num_envs=2))
    with pytest.raises(ValueError, match=r"PPOConfig\.frame_stack must be a positive integer"):
        make_ppo(config.replace(frame_stack=0), "CartPole-v1")
