"""The SB3 adapter against SB3's own DummyVecEnv over Gymnasium's CartPole, step for step;
its VecEnv interface; SB3's wrappers, PPO (learning), SBX and dict observations on top."""

from __future__ import annotations

import gymnasium as gym
import jax
import numpy as np
import pytest
from stable_baselines3 import PPO
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import (
    DummyVecEnv,
    VecFrameStack,
    VecMonitor,
    VecNormalize,
)

from _cartpole import put_gymnasium_states_into
from rollax.adapters.sb3 import RollaxVecEnv

pytestmark = pytest.mark.extra("sb3")

LIMIT = 25  # short episodes so that both termination and truncation happen
TRAIN_STEPS = 40_000  # PPO's budget in test_sb3_ppo_solves_cartpole


def _reference(num_envs: int) -> DummyVecEnv:
    """SB3's DummyVecEnv as make_vec_env builds it: Monitor over gym.make."""
    return DummyVecEnv(
        [lambda: Monitor(gym.make("CartPole-v1", max_episode_steps=LIMIT))] * num_envs
    )


class _TraceCount:
    """Counts how often RollaxVecEnv's step is traced (each trace is a compile)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.traces = 0
        original = RollaxVecEnv._step_outputs

        def counted(env, *args):
            self.traces += 1
            return original(env, *args)

        monkeypatch.setattr(RollaxVecEnv, "_step_outputs", counted)


def test_matches_dummy_vec_env_step_for_step():
    n = 6
    reference = _reference(n)
    ours = RollaxVecEnv("CartPole-v1", n)
    ours.set_attr("max_episode_steps", LIMIT)
    assert ours.observation_space == reference.observation_space
    assert ours.action_space == reference.action_space
    reference.seed(0)
    reference.reset()
    ours.seed(0)
    ours.reset()
    actions = np.random.default_rng(0).integers(0, 2, (300, n))
    ends = {"terminated": 0, "truncated": 0}
    for action in actions:
        put_gymnasium_states_into(ours, reference.envs)
        want_obs, want_rewards, want_dones, want_infos = reference.step(action)
        obs, rewards, dones, infos = ours.step(action)
        np.testing.assert_array_equal(dones, want_dones)
        np.testing.assert_array_equal(rewards, want_rewards)
        assert rewards.dtype == want_rewards.dtype and dones.dtype == want_dones.dtype
        # Rows that started a new episode hold fresh first observations, which both draw
        # at random (differently): only their range can be compared.
        np.testing.assert_allclose(obs[~dones], want_obs[~dones], rtol=1e-4, atol=1e-4)
        assert obs.dtype == want_obs.dtype and np.all(np.abs(obs[dones]) <= 0.05)
        assert len(infos) == n
        for info, want in zip(infos, want_infos, strict=True):
            assert set(info) == set(want)
            assert info["TimeLimit.truncated"] is want["TimeLimit.truncated"]
            if "terminal_observation" in want:
                np.testing.assert_allclose(
                    info["terminal_observation"], want["terminal_observation"], atol=1e-4
                )
                assert info["episode"]["r"] == want["episode"]["r"]
                assert info["episode"]["l"] == want["episode"]["l"]
                ends["truncated" if want["TimeLimit.truncated"] else "terminated"] += 1
    assert ends["terminated"] > 10 and ends["truncated"] > 3, ends


def test_vec_env_interface():
    n = 4
    env = RollaxVecEnv("CartPole-v1", n, render_mode="rgb_array")
    assert env.seed(7) == [7, 8, 9, 10]
    first = env.reset()
    assert env.reset_infos == [{}] * n
    env.seed(7)
    np.testing.assert_array_equal(env.reset(), first)  # seed() applies to the next reset
    assert not np.array_equal(env.reset(), first)  # unseeded resets continue the chain
    assert len({tuple(row) for row in first}) == n  # every environment its own start
    assert env.get_attr("render_mode") == ["rgb_array"] * n
    assert env.get_attr("max_episode_steps", indices=[1, 2]) == [500, 500]
    assert env.has_attr("gravity") and not env.has_attr("no_such_thing")
    assert env.get_attr("name", indices=0) == ["CartPole"]  # the environment definition's
    assert env.env_is_wrapped(Monitor) == [False] * n
    obs, rewards, dones, _ = env.step(np.zeros(n, np.int64))
    # SB3 writes into rewards (bootstrapping) and hands obs to torch: copies, not JAX's views.
    assert obs.flags.writeable and rewards.flags.writeable and dones.flags.writeable
    ((reset_obs, info),) = env.env_method("reset", indices=[2])
    assert info == {} and np.all(np.abs(reset_obs) <= 0.05)
    _after, *_ = env.step(np.ones(n, np.int64))
    frames = env.env_method("render", indices=[0, 3])
    assert [f.shape for f in frames] == [(120, 288, 3)] * 2 and frames[0].dtype == np.uint8
    assert env.render().shape == (240, 576, 3)  # SB3 tiles the frames 2 x 2
    env.close()
    with pytest.raises(ValueError, match=r"step_async\(\) before reset\(\)"):
        env.step(np.zeros(n, np.int64))


def test_params_change_without_recompiling(monkeypatch):
    counter = _TraceCount(monkeypatch)
    n = 4
    env, twin = RollaxVecEnv("CartPole-v1", n), RollaxVecEnv("CartPole-v1", n)
    for e in (env, twin):
        e.seed(0)
        e.reset()
        e.step(np.zeros(n, np.int64))
    traced = counter.traces
    env.params = env.params.replace(gravity=20.0)  # the property
    a, *_ = env.step(np.zeros(n, np.int64))
    b, *_ = twin.step(np.zeros(n, np.int64))
    assert not np.allclose(a[:, 3], b[:, 3])  # stronger gravity: the pole falls faster
    env.set_attr("force_mag", 5.0)  # a field, for all environments
    env.step(np.zeros(n, np.int64))
    assert counter.traces == traced
    assert env.get_attr("gravity") == [20.0] * n and env.get_attr("force_mag")[0] == 5.0
    # One value per environment changes the field's shape: compiled once more, then never.
    env.set_attr("gravity", 1.0, indices=[0])
    env.step(np.zeros(n, np.int64))
    assert counter.traces == traced + 1
    env.set_attr("gravity", 30.0, indices=[1, 2])
    env.set_attr("params", env.get_attr("params", indices=1)[0], indices=[3])
    env.step(np.zeros(n, np.int64))
    assert counter.traces == traced + 1
    assert [float(g) for g in env.get_attr("gravity")] == [1.0, 30.0, 30.0, 30.0]


def test_bad_input_is_a_message_before_any_compile(monkeypatch):
    counter = _TraceCount(monkeypatch)
    with pytest.raises(ValueError, match="Unknown environment id 'CartPol-v1'"):
        RollaxVecEnv("CartPol-v1", 2)
    with pytest.raises(ValueError, match="num_envs must be a positive integer, got 0"):
        RollaxVecEnv("CartPole-v1", 0)
    with pytest.raises(ValueError, match="render_mode must be None or 'rgb_array'"):
        RollaxVecEnv("CartPole-v1", 2, render_mode="human")
    env = RollaxVecEnv("CartPole-v1", 2)
    env.reset()
    traced = counter.traces
    with pytest.raises(ValueError, match=r"actions must have shape \(2,\) .* got shape \(3,\)"):
        env.step(np.zeros(3, np.int64))
    with pytest.raises(TypeError, match="actions must have a dtype that casts to int32"):
        env.step(np.zeros(2, np.float32))
    with pytest.raises(ValueError, match=r"actions must lie in \[0, 2\) .* got \[-1, 2\]"):
        env.step(np.array([-1, 2]))
    assert counter.traces == traced
    with pytest.raises(AttributeError, match="only 'params' and its fields"):
        env.set_attr("render_mode", "rgb_array")
    with pytest.raises(AttributeError, match="get_attr\\('nothing'\\)"):
        env.get_attr("nothing")
    with pytest.raises(AttributeError, match=r"methods \['render', 'reset'\]"):
        env.env_method("seed", 0)
    with pytest.raises(ValueError, match="take no reset options"):
        env.set_options({"low": -0.1})
    with pytest.raises(ValueError, match=r"params\.gravity has shape \(3,\)"):
        env.params = env.params.replace(gravity=np.ones(3, np.float32))
    with pytest.raises(ValueError, match=r"indices must be None, an int or ints in \[0, 2\)"):
        env.get_attr("gravity", indices=[5])
    env.step(np.zeros(2, np.int64))  # still works after all that


def test_sb3_wrappers_run_on_top():
    n = 4
    base = RollaxVecEnv("CartPole-v1", n)
    env = VecNormalize(VecFrameStack(VecMonitor(base), n_stack=3))
    env.seed(0)
    obs = env.reset()
    assert obs.shape == (n, 12)
    episodes = []
    for _ in range(100):
        obs, _rewards, dones, infos = env.step(np.random.default_rng(0).integers(0, 2, n))
        assert obs.shape == (n, 12) and np.all(np.abs(obs) <= 10.0)  # normalized, clipped
        for info, done in zip(infos, dones, strict=True):
            if done:
                assert info["terminal_observation"].shape == (12,)
                episodes.append(info["episode"]["l"])
    assert episodes and all(0 < length <= 500 for length in episodes)
    # Without VecMonitor, SB3's ep_info_buffer reads the adapter's own episode statistics.
    model = PPO("MlpPolicy", base, n_steps=32, batch_size=64, seed=0, device="cpu")
    model.learn(512)
    assert len(model.ep_info_buffer) > 0
    assert all(set(e) == {"r", "l", "t"} for e in model.ep_info_buffer)


def test_dict_observations():
    n = 2
    env = RollaxVecEnv("PixelCartPole-v1", n, height=40, state=True)
    assert isinstance(env.observation_space, gym.spaces.Dict)
    obs = env.reset()
    assert obs["pixels/fixed"].shape == (n, 40, 64, 3) and obs["pixels/fixed"].dtype == np.uint8
    assert obs["state"].shape == (n, 4) and obs["state"].dtype == np.float32
    ended = []
    for _ in range(60):
        obs, _, dones, infos = env.step(np.zeros(n, np.int64))
        ended += [infos[i]["terminal_observation"] for i in np.flatnonzero(dones)]
    assert ended and set(ended[0]) == {"pixels/fixed", "state"}
    assert ended[0]["pixels/fixed"].shape == (40, 64, 3)
    assert abs(ended[0]["state"][2]) > 0.2  # the pole fell: the true final state
    stacked = VecNormalize(VecFrameStack(env, 2), norm_obs_keys=["state"])
    model = PPO("MultiInputPolicy", stacked, n_steps=16, batch_size=32, seed=0, device="cpu")
    model.learn(32)


@pytest.mark.extra("playground")
@pytest.mark.filterwarnings("ignore:JAXopt is no longer maintained")
@pytest.mark.filterwarnings("ignore:Brax System")
def test_sb3_trains_on_a_playground_task():
    # A MuJoCo Playground task behind SB3's VecEnv: PPO collects, learns and evaluates.
    env = VecMonitor(RollaxVecEnv("playground/CartpoleBalance", 4, episode_length=50))
    assert env.observation_space.shape == (5,) and env.action_space.shape == (1,)
    model = PPO("MlpPolicy", env, n_steps=16, batch_size=32, n_epochs=1, seed=0, device="cpu")
    model.learn(total_timesteps=128)
    assert model.num_timesteps == 128
    rewards, lengths = evaluate_policy(model, env, n_eval_episodes=4, return_episode_rewards=True)
    assert lengths == [50] * 4 and all(0.0 < r <= 50.0 for r in rewards)  # to the time limit


# tfp-nightly's JAX backend, which SBX imports, uses a deprecated JAX name: not rollax's to fix.
@pytest.mark.filterwarnings("ignore:jax.core.pytype_aval_mappings is deprecated")
@pytest.mark.extra("sbx")
def test_sbx_runs_on_it():
    import sbx

    env = RollaxVecEnv("CartPole-v1", 4)
    env.reset()
    env.step(np.zeros(4, np.int64))  # rollax's step compiles under the suite's strict rules
    # SBX's own networks rely on JAX's default (implicit) rank and dtype promotion.
    with jax.numpy_rank_promotion("allow"), jax.numpy_dtype_promotion("standard"):
        model = sbx.PPO("MlpPolicy", env, n_steps=32, batch_size=64, seed=0)
        model.learn(256)
    assert model.num_timesteps == 256 and len(model.ep_info_buffer) > 0


@pytest.mark.slow
def test_sb3_ppo_solves_cartpole():
    """rl-zoo's CartPole settings for SB3's PPO; a greedy policy then holds the pole."""
    import torch

    torch.set_num_threads(1)  # a small MLP: more threads only contend
    env = RollaxVecEnv("CartPole-v1", 8)
    env.seed(0)
    model = PPO(
        "MlpPolicy",
        env,
        n_steps=32,
        batch_size=256,
        gae_lambda=0.8,
        gamma=0.98,
        n_epochs=20,
        ent_coef=0.0,
        learning_rate=1e-3,
        clip_range=0.2,
        seed=0,
        device="cpu",
    )
    model.learn(TRAIN_STEPS)
    evaluation = VecMonitor(RollaxVecEnv("CartPole-v1", 8))  # SB3 asks for a Monitor
    evaluation.seed(100)
    mean, _ = evaluate_policy(model, evaluation, n_eval_episodes=16, deterministic=True)
    assert mean >= 475, mean
