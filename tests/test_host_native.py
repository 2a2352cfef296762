"""Host libraries with batches of their own (rollax.host's ALE and envpool backends): their
autoreset modes converted to same-step transitions with no reset step, Atari's frames as
rollax's images, and an agent trained on them."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from rollax.host import episode_seeds, make


def _stream(env, actions: np.ndarray) -> list[tuple]:
    """Each step's transitions: observations, rewards, flags, final observations."""
    out = []
    for a in actions:
        ts = env.step(a)
        frames = lambda o: o["pixels/frames"] if isinstance(o, dict) else o  # noqa: E731
        out.append((frames(ts.obs).copy(), ts.reward, ts.terminated, ts.truncated,
                    frames(ts.final_obs).copy()))  # fmt: skip
    return out


@pytest.mark.extra("atari")
def test_ale_s_next_step_mode_converted_equals_its_same_step_mode():
    from ale_py.vector_env import AtariVectorEnv

    settings = dict(max_num_frames_per_episode=200, repeat_action_probability=0.25)
    same = make("ale/Pong-v5", 3, **settings)
    assert same.observation_space["pixels/frames"].shape == (84, 84, 4)
    nxt = make(AtariVectorEnv("pong", 3, autoreset_mode="NextStep", **settings))
    actions = np.random.default_rng(0).integers(0, 6, (120, 3))
    same.reset(seed=5), nxt.reset(seed=5)
    a, b = _stream(same, actions), _stream(nxt, actions)
    assert sum(int(t[3].sum()) for t in a) == 3 * 2  # 50 steps an episode: two cuts each
    for x, y in zip(a, b, strict=True):
        for u, v in zip(x, y, strict=True):
            np.testing.assert_array_equal(u, v)
    same.close(), nxt.close()


@pytest.mark.extra("envpool")
def test_envpool_s_next_step_resets_are_taken_at_once_and_cost_no_transition():
    import envpool

    n, steps = 4, 300
    env = make("envpool/CartPole-v1", n)
    actions = np.random.default_rng(0).integers(0, 2, (steps, n))
    env.reset(seed=3)
    converted = _stream(env, actions)
    env.close()
    assert sum(int((t[2] | t[3]).sum()) for t in converted) > 20
    # envpool's own next-step stream from the same seed: after an episode ends, an
    # environment's next step is a reset that ignores its action. Each environment takes
    # the converted stream's actions in order on its real steps only.
    with warnings.catch_warnings():  # Gymnasium's, on envpool's float64 bounds
        warnings.filterwarnings("ignore", ".*precision lowered by casting", UserWarning)
        pool = envpool.make("CartPole-v1", env_type="gymnasium", num_envs=n,
                            seed=episode_seeds(3, n)[0] % (2**31 - n))  # fmt: skip
        pool.reset()
    real = np.zeros(n, int)  # real steps taken by each environment
    resetting = np.zeros(n, bool)
    rows = [[] for _ in range(n)]
    while (real < steps).any():
        a = actions[np.minimum(real, steps - 1), np.arange(n)]
        obs, reward, terminated, truncated, info = pool.step(a)
        assert np.array_equal(info["env_id"], np.arange(n))
        for i in np.flatnonzero(~resetting & (real < steps)):
            rows[i].append((obs[i], reward[i], terminated[i], truncated[i]))
        real += ~resetting
        resetting = terminated | truncated
    pool.close()
    for i in range(n):
        for (obs, reward, terminated, truncated), step in zip(rows[i], converted, strict=True):
            np.testing.assert_array_equal(step[4][i], obs)  # the observation reached
            assert (step[1][i], step[2][i], step[3][i]) == (reward, terminated, truncated)


@pytest.mark.extra("mujoco")
def test_gymnasium_s_mujoco_tasks_are_cut_by_their_time_limit_as_truncation():
    env = make("gymnasium/HalfCheetah-v5", 2)
    assert env.observation_space.shape == (17,) and env.observation_space.dtype == np.float32
    env.reset(seed=0)
    actions = np.random.default_rng(0).uniform(-1, 1, (1000, 2, 6)).astype(np.float32)
    steps = _stream(env, actions)
    ended = [t for t, step in enumerate(steps) if (step[2] | step[3]).any()]
    assert ended == [999]  # one episode of 1,000 steps each, and no reset step
    obs, _, terminated, truncated, final_obs = steps[-1]
    assert truncated.all() and not terminated.any() and (obs != final_obs).any(axis=1).all()
    env.close()


@pytest.mark.extra("envpool")
def test_ppo_trains_on_atari_frames_from_envpool():
    import jax

    from rollax.agents.ppo import PPOConfig, make_ppo

    config = PPOConfig(num_envs=2, num_steps=8, num_minibatches=1, num_epochs=1, total_steps=32)
    agent = make_ppo(config, "envpool/Breakout-v5", max_episode_steps=6)
    state = agent.init(jax.random.key(0))
    assert state.obs["pixels/frames"].shape == (1, 1, 2, 84, 84, 4)
    state, metrics = agent.run(state, 32)
    assert int(metrics["env_steps"]) == 32 and int(metrics["episodes"][0]) == 4  # 16 steps each
    assert bool(metrics["finite"][0])


@pytest.mark.extra("envpool")
@pytest.mark.parametrize("algo", ["ppo", "pqn"])
def test_the_atari_presets_read_the_nature_cnn_s_features_with_linear_heads(algo):
    import jax

    from rollax.runs import get_algorithm

    algorithm = get_algorithm(algo)
    config = algorithm.config_for("envpool/Breakout-v5")
    assert config == algorithm.config_for("ale/Breakout-v5") and config.hidden_sizes == ()
    agent = algorithm.make(config.replace(total_steps=config.batch_size), "envpool/Breakout-v5")
    params = jax.eval_shape(agent.init, jax.random.key(0)).params["params"]
    heads = {k: v["kernel"].shape[1:] for k, v in params.items() if not k.startswith("encoder")}
    assert heads == ({"actor_head": (512, 4), "critic_head": (512, 1)} if algo == "ppo"
                     else {"q": (512, 4)})  # fmt: skip


def test_only_a_recurrent_network_needs_a_hidden_layer():
    from rollax.agents.ppo import PPOConfig

    PPOConfig(hidden_sizes=()).validate()
    with pytest.raises(ValueError, match=r"hidden_sizes must be positive integers \(at least"):
        PPOConfig(hidden_sizes=(), recurrent="gru").validate()
