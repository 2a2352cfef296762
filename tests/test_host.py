"""Host environments (rollax.host): Gymnasium's vector environments in every autoreset mode
seen as same-step transitions, seeded from one seed, and bad environments stopped with a
message that names them."""

from __future__ import annotations

import os

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from rollax import spaces
from rollax.host import HostEnvError, episode_seeds, make

pytestmark = pytest.mark.extra("gymnasium")

MODES = (AutoresetMode.SAME_STEP, AutoresetMode.NEXT_STEP, AutoresetMode.DISABLED)


class TruncatedEvery5(gymnasium.Env):
    """Never terminates; the time limit cuts every episode after 5 steps. Reward 1 a step.

    Its observation counts its calls of ``step`` (all episodes together) and the step within
    the episode, so a test sees every step the environment took.
    """

    observation_space = gymnasium.spaces.Box(0, np.inf, (2,), np.float32)
    action_space = gymnasium.spaces.Discrete(2)

    def __init__(self) -> None:
        self.calls = 0
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.array([self.calls, self.t], np.float32), {}

    def step(self, action):
        self.calls += 1
        self.t += 1
        obs = np.array([self.calls, self.t], np.float32)
        return obs, 1.0, False, self.t == 5, {}


def _cartpoles(mode: AutoresetMode, n: int = 4) -> SyncVectorEnv:
    return SyncVectorEnv([lambda: gymnasium.make("CartPole-v1")] * n, autoreset_mode=mode)


def _actions(steps: int, n: int) -> np.ndarray:
    return np.random.default_rng(0).integers(0, 2, (steps, n))


def _transitions(env, actions: np.ndarray) -> list[tuple]:
    env.reset(seed=7)
    out = []
    for a in actions:
        ts = env.step(a)
        out.append((ts.obs, ts.reward, ts.terminated, ts.truncated, ts.final_obs))
    return out


def _reference(actions: np.ndarray, seed: int = 7) -> list[tuple]:
    """Gymnasium's own SAME_STEP SyncVectorEnv, read directly, from the seeds a HostEnv uses."""
    env = _cartpoles(AutoresetMode.SAME_STEP, actions.shape[1])
    env.reset(seed=episode_seeds(seed, env.num_envs))
    out = []
    for a in actions:
        obs, reward, terminated, truncated, info = env.step(a)
        final = obs.copy()
        for i in np.flatnonzero(terminated | truncated):
            final[i] = info["final_obs"][i]
        out.append((obs, reward, terminated, truncated, final))
    env.close()
    return out


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.name)
def test_every_autoreset_mode_gives_gymnasium_s_same_step_transitions(mode):
    actions = _actions(300, 4)
    with make(_cartpoles(mode)) as env:
        got = _transitions(env, actions)
    want = _reference(actions)
    assert sum(bool(t[2].any() or t[3].any()) for t in want) > 10  # many episodes ended
    for step, (g, w) in enumerate(zip(got, want, strict=True)):
        for name, a, b in zip(("obs", "reward", "terminated", "truncated", "final_obs"), g, w,
                              strict=True):  # fmt: skip
            np.testing.assert_array_equal(a, b, err_msg=f"{mode.name}: {name} at step {step}")


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.name)
def test_n_steps_are_n_transitions_and_no_action_is_spent_on_a_reset(mode):
    vec = SyncVectorEnv([TruncatedEvery5] * 3, autoreset_mode=mode)
    with make(vec) as env:
        env.reset(seed=0)
        for t in range(1, 1001):
            ts = env.step(np.zeros(3, int))
            assert not ts.terminated.any()
            assert (ts.truncated == (t % 5 == 0)).all(), t
            if t % 5 == 0:
                np.testing.assert_array_equal(ts.final_obs[:, 1], 5)  # the episode's last
                np.testing.assert_array_equal(ts.obs[:, 1], 0)  # the next one's first
                np.testing.assert_array_equal(ts.info["episode_length"], 5)
                np.testing.assert_array_equal(ts.info["episode_return"], 5.0)
            else:
                np.testing.assert_array_equal(ts.obs, ts.final_obs)
        calls = [e.unwrapped.calls for e in vec.envs]
    assert calls == [1000, 1000, 1000]  # 1,000 steps of each environment, none wasted


@pytest.mark.processes  # worker processes
def test_worker_processes_give_the_transitions_of_one_process():
    actions = _actions(60, 3)
    sync = make(TruncatedEvery5, 3)
    workers = make(TruncatedEvery5, 3, vectorization="async")
    try:
        for g, w in zip(_transitions(workers, actions), _transitions(sync, actions), strict=True):
            for a, b in zip(g, w, strict=True):
                np.testing.assert_array_equal(a, b)
    finally:
        sync.close()
        workers.close()


def test_first_episodes_are_seeded_from_the_seed():
    env = make("gymnasium/CartPole-v1", 4)
    first = env.reset(seed=1)
    assert not (first[0] == first[1:]).all(axis=1).any()  # each environment its own seed
    np.testing.assert_array_equal(env.reset(seed=1), first)
    assert not np.array_equal(env.reset(seed=2), first)
    env.close()


def test_spaces_come_through_rollax_s_with_images_kept_as_uint8():
    class Frames(TruncatedEvery5):
        observation_space = gymnasium.spaces.Dict(
            {
                "pixels/top": gymnasium.spaces.Box(0, 255, (8, 8, 3), np.uint8),
                "state": gymnasium.spaces.Box(-1, 1, (2,), np.float64),
            }
        )
        action_space = gymnasium.spaces.Box(-1, 1, (2,), np.float64)

        def _obs(self):  # drawn from the generator reset seeds
            return {"pixels/top": self.np_random.integers(0, 256, (8, 8, 3), np.uint8),
                    "state": self.np_random.uniform(-1, 1, 2)}  # fmt: skip

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            return self._obs(), {}

        def step(self, action):
            return self._obs(), 0.0, False, False, {}

    env = make(Frames, 2)
    assert env.observation_space == spaces.Dict(
        {
            "pixels/top": spaces.Box(0, 255, (8, 8, 3), np.uint8),
            "state": spaces.Box(-1, 1, (2,), np.float32),
        }
    )
    assert env.action_space == spaces.Box(-1, 1, (2,), np.float32)
    obs = env.reset(seed=0)
    assert obs["pixels/top"].dtype == np.uint8 and obs["state"].dtype == np.float32
    assert env.step(np.zeros((2, 2), np.float32)).obs["pixels/top"].dtype == np.uint8
    env.close()


# Bad environments: each stops with a message naming the environment, the step and what was
# expected, and leaves no worker process behind. Gymnasium's AsyncVectorEnv also logs a failed
# worker's error as a warning before it raises it (the suite turns warnings into errors).
WORKER_LOG = "ignore:.*ERROR:UserWarning"  # its logger.error, in red


class Raises(TruncatedEvery5):
    def step(self, action):
        if self.calls == 2:
            raise ZeroDivisionError("the simulator blew up")
        return super().step(action)


class OldGym(TruncatedEvery5):
    def step(self, action):
        obs, reward, _, truncated, info = super().step(action)
        return obs, reward, truncated, info


class NaNs(TruncatedEvery5):
    def step(self, action):
        obs, *rest = super().step(action)
        return (obs * np.nan if self.calls == 3 else obs), *rest


class WrongShape(TruncatedEvery5):
    def step(self, action):
        _, *rest = super().step(action)
        return np.zeros(3, np.float32), *rest


class Unseeded(TruncatedEvery5):
    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.random.random(2).astype(np.float32), {}  # noqa: NPY002 (the global one)


class MultiDiscreteActions(TruncatedEvery5):
    action_space = gymnasium.spaces.MultiDiscrete([2, 3])


class Dies(TruncatedEvery5):
    def step(self, action):
        if self.calls == 2:
            os._exit(1)  # a worker process killed mid-run
        return super().step(action)


@pytest.mark.filterwarnings(WORKER_LOG)
@pytest.mark.parametrize(
    "vectorization", ["sync", pytest.param("async", marks=pytest.mark.processes)]
)
@pytest.mark.parametrize(
    "bad, message",
    [
        (
            Raises,
            r"step at its step 3: it raised ZeroDivisionError: the simulator blew up"
            r"(.|\n)*Its traceback:(.|\n)*in step",
        ),
        (OldGym, r"step 1: step returned 4 values \(Gym's old four values"),
        (NaNs, r"step at step 3: the observation is not finite \(NaN or inf\) in environment"),
        (
            WrongShape,
            r"environment \d, step at its step 1: the observation has shape \(3,\), "
            r"expected \(2,\)",
        ),
        (Unseeded, r"reset at step 0: reset ignores its seed"),
    ],
    ids=["raises", "old-gym", "nan", "shape", "unseeded"],
)
def test_a_bad_environment_stops_with_a_message_naming_it(bad, message, vectorization):
    env = make(bad, 2, vectorization=vectorization)
    workers = list(getattr(env.env, "processes", []))
    with pytest.raises(HostEnvError, match=rf"{bad.__name__}(.|\n)*{message}"):
        env.reset(seed=0)
        for _ in range(5):
            env.step(np.zeros(2, int))
    assert env.env.closed
    for process in workers:
        process.join(timeout=10)
        assert not process.is_alive()


@pytest.mark.filterwarnings(WORKER_LOG)
@pytest.mark.processes  # worker processes
def test_a_worker_that_dies_stops_the_run_and_no_worker_outlives_it():
    env = make(Dies, 2, vectorization="async")
    workers = list(env.env.processes)
    env.reset(seed=0)
    env.step(np.zeros(2, int))
    env.step(np.zeros(2, int))
    with pytest.raises(HostEnvError, match=r"Dies, step at step 3: the environment raised"):
        env.step(np.zeros(2, int))
    for process in workers:
        process.join(timeout=10)
        assert not process.is_alive()


def test_spaces_the_agents_cannot_take_are_refused_by_name():
    with pytest.raises(ValueError, match=r"MultiDiscreteActions: rollax's agents take Discrete "
                                         r"or Box action spaces; the environment's is "
                                         r"MultiDiscrete"):  # fmt: skip
        make(MultiDiscreteActions)
    with pytest.raises(ValueError, match=r"gymnasium has no environment 'CartPol-v1'. Close: "
                                         r"CartPole-v1"):  # fmt: skip
        make("gymnasium/CartPol-v1")
    with pytest.raises(ValueError, match=r"vectorization must be one of \('sync', 'async'\)"):
        make(TruncatedEvery5, vectorization="threads")
    with pytest.raises(TypeError, match=r"got an unexpected keyword argument 'size'"):
        make(TruncatedEvery5, size=3)


class LeavesItsBox(TruncatedEvery5):
    observation_space = gymnasium.spaces.Box(0, 3, (2,), np.float32)


def test_the_checker_reports_what_a_host_environment_breaks():
    from rollax.host import check_host_env

    assert check_host_env("gymnasium/CartPole-v1", steps=100) == ()
    (finding,) = check_host_env(LeavesItsBox, steps=20)
    assert finding.method == "observation_space"
    assert (
        "step 4: the observation of environment(s) [0, 1, 2, 3] lies outside" in finding.message
    )  # 4 calls > 3
    (finding,) = check_host_env(OldGym)
    assert finding.method == "step" and "Gym's old four values" in finding.message
    (finding,) = check_host_env(MultiDiscreteActions)
    assert finding.method == "make" and "MultiDiscrete" in finding.message


@pytest.mark.processes  # the command line, in a process of its own
def test_rollax_check_takes_a_host_environment_by_import_path(tmp_path):
    import subprocess
    import sys

    (tmp_path / "my_envs.py").write_text(
        "import gymnasium, numpy as np\n\n"
        "class Drifts(gymnasium.Env):\n"
        "    observation_space = gymnasium.spaces.Box(-1, 1, (2,), np.float32)\n"
        "    action_space = gymnasium.spaces.Discrete(2)\n\n"
        "    def reset(self, *, seed=None, options=None):\n"
        "        super().reset(seed=seed)\n"
        "        self.x = self.np_random.uniform(-0.5, 0.5, 2).astype(np.float32)\n"
        "        return self.x, {}\n\n"
        "    def step(self, action):\n"
        "        self.x = self.x + 0.1  # out of its box within 15 steps\n"
        "        return self.x, 1.0, False, False, {}\n"
    )
    proc = subprocess.run([sys.executable, "-m", "rollax", "check", "my_envs:Drifts"],
                          cwd=tmp_path, capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert "- my_envs:Drifts: observation_space: step " in proc.stdout
    assert "lies outside its space Box(low=-1.0, high=1.0" in proc.stdout
    assert "my_envs:Drifts: 1 finding" in proc.stderr


class Truncates(gymnasium.Env):
    """The truncation probe: one observation, reward 1 a step, cut by the time limit every 5
    steps and never terminated. With gamma 0.9 its value is 1 / (1 - 0.9) = 10; a learner that
    took truncation for termination would learn the mean of 1, 1.9, 2.71, 3.44 and 4.10: 2.6."""

    observation_space = gymnasium.spaces.Box(-1, 1, (4,), np.float32)
    action_space = gymnasium.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(4, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.zeros(4, np.float32), 1.0, False, self.t == 5, {}


def _value_of_zeros(agent, state) -> float:
    """The first member's learned value of the probe's one observation."""
    import jax.numpy as jnp

    one = agent.shard_state(state)
    learner, network = agent.driver.learner, agent.driver.learner.network
    obs = jnp.zeros((1, 4))
    outputs = network.apply(one.params, obs, network.initial_carry(1), jnp.zeros(1, bool))
    return float(learner.value(outputs[1:])[0])


@pytest.mark.parametrize("algo", ["ppo", "pqn"])
def test_on_policy_agents_learn_the_value_of_a_host_environment_that_only_truncates(algo):
    # Taking truncation for termination, they learn 2.7 (PPO) and 3.6 (PQN).
    import jax

    from rollax.agents.ppo import PPOConfig, make_ppo
    from rollax.agents.pqn import PQNConfig, make_pqn

    common = dict(num_envs=8, num_steps=20, gamma=0.9, num_minibatches=2, hidden_sizes=(16,),
                  learning_rate=3e-3, total_steps=8 * 20 * 80)  # fmt: skip
    if algo == "ppo":
        agent = make_ppo(PPOConfig(**common), make(Truncates, 8))
    else:  # one-step targets (lambda 0) at a rate that lets 80 updates reach the fixed point
        common["learning_rate"] = 3e-2
        agent = make_pqn(PQNConfig(**common, td_lambda=0.0), make(Truncates, 8))
    state = agent.init(jax.random.key(0))
    data = agent.collect(state)[1]
    assert not data.terminated.any() and data.truncated.sum() == 8 * 20 // 5
    state, metrics = agent.run(state, 8 * 20 * 80)
    assert int(metrics["env_steps"]) == 8 * 20 * 80
    assert _value_of_zeros(agent, state) == pytest.approx(10.0, rel=0.15)


class TruncatesBox(Truncates):
    """The truncation probe with a continuous action, which changes nothing."""

    action_space = gymnasium.spaces.Box(-1, 1, (1,), np.float32)


OFF_POLICY = dict(num_envs=4, buffer_size=2_000, learning_starts=200, batch_size=64,
                  learning_rate=3e-3, gamma=0.9)  # fmt: skip
"""The off-policy agents' truncation probes' settings (tests/test_dqn.py, test_sac.py,
test_td3.py), on the host."""


@pytest.mark.parametrize("algo", ["dqn", "sac", "td3"])
def test_off_policy_agents_learn_the_value_of_a_host_environment_that_only_truncates(algo):
    import jax
    import jax.numpy as jnp

    from rollax.agents.dqn import DQNConfig, make_dqn
    from rollax.agents.sac import SACConfig, make_sac
    from rollax.agents.td3 import TD3Config, make_td3

    obs = jnp.zeros((1, 1, 4))
    if algo == "dqn":
        config = DQNConfig(**OFF_POLICY, total_steps=3_000, gradient_steps=1, tau=0.05,
                           target_update_every=1, exploration_fraction=0.3, hidden_sizes=(32,),
                           dueling=False)  # fmt: skip
        agent = make_dqn(config, make(Truncates, 4))
        value = lambda state: agent.q_values(state, obs).max()  # noqa: E731
    else:
        if algo == "sac":
            config = SACConfig(**OFF_POLICY, total_steps=4_000, tau=0.05, init_alpha=1e-3,
                               autotune_alpha=False, hidden_sizes=(32, 32))  # fmt: skip
            agent = make_sac(config, make(TruncatesBox, 4))
        else:
            config = TD3Config(**OFF_POLICY, total_steps=8_000, hidden_sizes=(32,))
            agent = make_td3(config, make(TruncatesBox, 4))
        value = lambda state: agent.q_values(state, obs, jnp.zeros((1, 1, 1))).mean()  # noqa: E731
    state, metrics = agent.run(agent.init(jax.random.key(0)), config.total_steps)
    assert int(metrics["env_steps"]) == config.total_steps
    assert float(value(state)) == pytest.approx(10.0, rel=0.15)
