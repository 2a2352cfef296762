"""MuJoCo Playground's tasks through rollax.make: Playground's own physics, fresh resets, and
rollax's time limit with the true final observation."""

from __future__ import annotations

import importlib.util

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import rollax
from rollax.adapters._suite import suite_code
from rollax.adapters.playground import PHYSICS, PlaygroundEnv
from rollax.envs import RESET_STRATEGIES

# Playground imports Brax, whose dependencies announce their own deprecations.
pytestmark = [
    pytest.mark.extra("playground"),
    pytest.mark.filterwarnings("ignore:JAXopt is no longer maintained:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:Brax System:UserWarning"),
]

TASK = "CartpoleBalance"  # one control step is one physics step: the cheapest to compile


@pytest.fixture(scope="module")
def env():
    return rollax.make(f"playground/{TASK}", num_envs=8)


def test_steps_like_playground_itself():
    # The same key and actions: Playground's observations and rewards, step for step.
    from mujoco_playground import registry

    with suite_code():
        theirs = registry.load(TASK, config_overrides={"impl": "jax"})
    ours = PlaygroundEnv(TASK)
    key = jax.random.key(3)
    actions = jax.random.uniform(jax.random.key(4), (20, 1), minval=-1.0, maxval=1.0)

    def episode(reset, step):
        def body(state, action):
            state = step(state, action)
            return state, (state.obs, state.reward, state.done)

        state = reset(jax.random.key_data(key))
        return state.obs, jax.lax.scan(body, state, actions)[1]

    params = ours.default_params
    mine = jax.jit(
        lambda: episode(
            lambda k: ours.reset_env(key, params),
            lambda s, a: ours.step_env(s, a, params)[0],
        )
    )()
    with suite_code():  # Playground's code, traced as its authors do
        expected = jax.jit(lambda: episode(theirs.reset, theirs.step))()
    jax.tree.map(np.testing.assert_array_equal, mine, expected)
    assert not bool(np.asarray(mine[1][2]).any())  # a balanced pole does not end


def test_playground_s_full_reset_episodes_are_rollax_s_under_the_same_keys():
    # Playground's full_reset=True (its wrapper, 5-step episodes) computes a reset from a new
    # key on every step and keeps it where an episode ended, as rollax's fresh strategies do.
    # Given the key it drew for each episode, rollax's reset gives that episode's first
    # observation and rollax's steps the rest, rewards included, across both resets.
    from mujoco_playground import registry, wrapper

    with suite_code():
        theirs = registry.load(TASK, config_overrides={"impl": "jax"})
        wrapped = wrapper.wrap_for_brax_training(theirs, episode_length=5, full_reset=True)
    ours, split = PlaygroundEnv(TASK), jax.vmap(jax.random.split)
    params = ours.default_params
    actions = jax.random.uniform(jax.random.key(4), (14, 1, 1), minval=-1.0, maxval=1.0)

    def playground():
        rng = jax.random.key_data(jax.random.split(jax.random.key(3), 1))  # (1, 2) uint32
        state = wrapped.reset(rng)

        def body(state, action):
            # The keys as its wrapper takes them: [..., 1] of split raw uint32 keys (for raw
            # keys that mixes words of both children; any key will do, the same for both).
            reset_key = split(state.info["AutoResetWrapper_rng"])[..., 1]
            start_key = split(reset_key)[..., 1]  # what its reset(reset_key) resets the task with
            state = wrapped.step(state, action)
            return state, (state.obs[0], state.reward[0], state.done[0], start_key[0])

        return state, split(rng)[0, ..., 1], jax.lax.scan(body, state, actions)[1]

    with suite_code():
        _, first_key, (obs, reward, done, start_keys) = jax.jit(playground)()
    ends = np.flatnonzero(np.asarray(done))
    assert ends.tolist() == [4, 9]  # the limit, every 5 steps; then the new episode's first obs

    @jax.jit
    def episode(key, actions):
        def body(state, action):
            state, reward, _ = ours.step_env(state, action, params)
            return state, (ours.observe(state, params), reward)

        start = ours.reset_env(key, params)
        return ours.observe(start, params), jax.lax.scan(body, start, actions)[1]

    starts = [(first_key, -1), *((start_keys[t], t) for t in ends)]
    for key, t in starts:
        first, (mine, rewards) = episode(key, actions[t + 1 : t + 5, 0])
        if t >= 0:
            np.testing.assert_array_equal(first, obs[t])  # the first obs Playground kept
        np.testing.assert_array_equal(mine, obs[t + 1 : t + 5])
        np.testing.assert_array_equal(rewards, reward[t + 1 : t + 5])
    assert len({tuple(np.asarray(obs[t])) for t in ends}) == 2  # two different fresh starts


def _one_step_episodes(env, read, episodes=7):
    """Episodes of one step each from key 0, so that every step resets every environment.

    Returns the last state, each step's ``truncated`` ``(episodes - 1, num_envs)``, and
    ``read(state)`` at every episode's start, stacked ``(episodes, ...)``.
    """
    params = env.default_params.replace(max_episode_steps=1)

    @jax.jit
    def run(key):
        state, _ = env.reset(key, params)

        def step(state, key):
            state, ts = env.step(state, env.sample_actions(key), params)
            return state, (ts.truncated, read(state))

        last, (truncated, later) = jax.lax.scan(step, state, jax.random.split(key, episodes - 1))
        return last, truncated, jnp.concatenate([read(state)[None], later])

    return jax.device_get(run(jax.random.key(0)))


@pytest.mark.parametrize("strategy", [s for s in RESET_STRATEGIES if s != "cached"])
def test_every_episode_starts_fresh_under_every_strategy(strategy):
    # One-step episodes: every step resets every environment. The cart's position and the
    # pole's angle are drawn at every reset, so a reused reset key would repeat a start.
    env = rollax.make(f"playground/{TASK}", num_envs=8, reset_strategy=strategy)
    _, truncated, starts = _one_step_episodes(env, lambda state: state.core.data.qpos)
    assert truncated.all()
    qpos = starts.reshape(-1, starts.shape[-1])
    assert len(np.unique(qpos, axis=0)) == len(qpos) == 8 * 7


def test_per_environment_time_limits_work_under_every_strategy():
    # A time limit is read by no reset, so each environment may have its own under every
    # strategy, pool (the CPU default from 16 environments) included. The fault: the pool's
    # check of which params a reset reads paired the params' leaves with the axes' and
    # counted Playground's `model=None` as a leaf, which raised before anything ran.
    limits = np.tile(np.array([2, 3], np.int32), 8)
    for strategy in RESET_STRATEGIES:
        env = rollax.make(f"playground/{TASK}", num_envs=16, reset_strategy=strategy)
        params = env.default_params.replace(max_episode_steps=limits)
        state, _ = jax.eval_shape(env.reset, jax.random.key(0), params)
        jax.eval_shape(env.step, state, jnp.zeros((16, 1)), params)
    env = rollax.make(f"playground/{TASK}", num_envs=16)
    assert env.reset_strategy == "pool"
    params = env.default_params.replace(max_episode_steps=limits)

    @jax.jit
    def truncations(key):
        def step(state, _):
            state, ts = env.step(state, jnp.zeros((16, 1)), params)
            return state, ts.truncated

        return jax.lax.scan(step, env.reset(key, params)[0], None, 6)[1]

    # Environment i's episodes end at every limits[i]-th step, as truncations.
    expected = np.arange(1, 7)[:, None] % limits == 0
    np.testing.assert_array_equal(truncations(jax.random.key(0)), expected)


def test_a_time_limit_is_truncation_with_the_true_final_observation(env):
    # Playground's episode limit ends the episode as truncated, not terminated, with the true
    # last observation: what the same step observes under a longer limit (params are data:
    # one compiled step serves both). The next episode starts elsewhere.
    short = env.default_params.replace(max_episode_steps=3)
    assert int(env.default_params.max_episode_steps) == 1000  # the task's episode_length
    longer = short.replace(max_episode_steps=100)
    step, action = jax.jit(env.step), jnp.zeros((8, 1))
    state, _ = jax.jit(env.reset)(jax.random.key(1), short)
    for _ in range(2):
        state, ts = step(state, action, short)
        assert not bool(ts.done.any())
    _, cut = step(state, action, short)
    _, on = step(state, action, longer)
    assert bool(cut.truncated.all()) and not bool(cut.terminated.any()) and not bool(on.done.any())
    np.testing.assert_array_equal(cut.final_obs, on.obs)
    assert not np.allclose(cut.obs, on.obs)
    assert step._cache_size() == 1


def test_config_entries_and_the_backend_are_options(env):
    short = PlaygroundEnv(TASK, episode_length=50, config_overrides={"sim_dt": 0.005})
    assert int(short.default_params.max_episode_steps) == 50
    assert short._env.sim_dt == 0.005 and short._env.n_substeps == 2
    assert short.impl == "jax" and env.action_space.shape == (1,)
    assert env.observation_space.shape == (5,)


def test_an_accelerator_batches_the_physics_resets_in_a_pool(env, monkeypatch):
    # A reset is a physics forward pass: on an accelerator it is drawn in batched refills
    # (pool), not computed for every environment on every step as for a cheap reset.
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert rollax.envs.VecEnv(env.env, num_envs=1024).reset_strategy == "pool"
    assert rollax.make("CartPole-v1", num_envs=1024).reset_strategy == "every_step"
    monkeypatch.setattr(jax, "default_backend", lambda: "cpu")
    assert rollax.envs.VecEnv(env.env, num_envs=1024).reset_strategy == "pool"
    assert rollax.envs.VecEnv(env.env, num_envs=8).reset_strategy == "on_done"


def test_unknown_tasks_options_missing_models_and_extras_are_messages(monkeypatch, tmp_path):
    with pytest.raises(ValueError, match="Did you mean 'playground/CartpoleBalance'"):
        rollax.make("playground/CartpoleBalanse")
    with pytest.raises(ValueError, match="impl='mjx': Playground's backends are jax, warp"):
        rollax.make(f"playground/{TASK}", impl="mjx")
    # Warp's state shares buffers over the batch: an autoreset's gather failed on them.
    with pytest.raises(ValueError, match="impl='warp': MuJoCo Warp's state holds buffers"):
        rollax.make(f"playground/{TASK}", impl="warp")
    with pytest.raises(ValueError, match="impl='warp'"):  # the config entry, as an override
        rollax.make(f"playground/{TASK}", config_overrides={"impl": "warp"})
    with pytest.raises(ValueError, match="has no config entry 'ctrl_dtt'; its entries: "):
        rollax.make(f"playground/{TASK}", ctrl_dtt=0.02)
    # A robot task without Menagerie's models is refused (Playground would clone them).
    monkeypatch.delenv("MENAGERIE_ROOT", raising=False)
    from mujoco_playground._src import mjx_env

    monkeypatch.setattr(mjx_env, "MENAGERIE_PATH", tmp_path / "absent")
    with pytest.raises(ValueError, match=r"needs MuJoCo Menagerie's robot models \(none found"):
        rollax.make("playground/Go1JoystickFlatTerrain")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match=r"menagerie_path=.* is not a Menagerie checkout"):
        rollax.make("playground/Go1JoystickFlatTerrain", menagerie_path=empty)
    assert not (tmp_path / "absent").exists()  # nothing was cloned
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "mujoco_playground" else real(name, *a),
    )
    with pytest.raises(ValueError, match=r"pip install 'rollax\[playground\]'"):
        rollax.make("playground/WalkerWalk")


def test_model_values_are_params_per_environment_and_never_recompile(tmp_path):
    # The cart's mass and the physics step as data: a heavier cart moves less under the same
    # push, one compiled step serves every value, and a leading axis gives each environment
    # its own (what the environment alone reaches with that value).
    from rollax.checkpoints import Checkpointer

    env = rollax.make(f"playground/{TASK}", num_envs=2, model_params=("body_mass", "opt.timestep"))
    params = env.default_params
    assert float(params.model["opt.timestep"]) == pytest.approx(0.01)
    mass = params.model["body_mass"]
    heavy = params.replace(model={**params.model, "body_mass": mass * np.float32([1, 5, 1])})
    step, push = jax.jit(env.step), jnp.ones((2, 1))
    state, _ = jax.jit(env.reset)(jax.random.key(0), params)

    def cart_moved(p):
        s = state
        for _ in range(20):
            s, _ = step(s, push, p)
        return np.abs(np.asarray(s.core.data.qpos[:, 0] - state.core.data.qpos[:, 0]))

    light_moved, heavy_moved = cart_moved(params), cart_moved(heavy)
    assert (heavy_moved < 0.5 * light_moved).all()
    assert step._cache_size() == 1
    each = params.replace(
        model={**params.model, "body_mass": np.stack([mass, heavy.model["body_mass"]])}
    )
    np.testing.assert_allclose(cart_moved(each), [light_moved[0], heavy_moved[1]], rtol=1e-5)
    ckpt = Checkpointer(tmp_path)  # params travel with a run's checkpoints
    ckpt.save(0, heavy, {})
    restored, _ = ckpt.restore(jax.eval_shape(lambda: heavy))
    np.testing.assert_array_equal(restored.model["body_mass"], heavy.model["body_mass"])
    with pytest.raises(ValueError, match="model_params: 'body_parentid' is not a "):
        rollax.make(f"playground/{TASK}", model_params=("body_parentid",))
    with pytest.raises(ValueError, match=r"'opt\.timestepp' is not a data field.*: .*body_mass"):
        rollax.make(f"playground/{TASK}", model_params=("opt.timestepp",))


def _cart_mass(model, keys):
    """A domain randomizer in Playground's form: the cart's mass times U(0.5, 2) per key."""

    @jax.vmap
    def draw(key):
        return model.body_mass.at[1].multiply(jax.random.uniform(key, minval=0.5, maxval=2.0))

    in_axes = jax.tree.map(lambda _: None, model).tree_replace({"body_mass": 0})
    return model.tree_replace({"body_mass": draw(keys)}), in_axes


@pytest.mark.parametrize("strategy", ["pool", "cached"])
def test_domain_randomization_draws_new_physics_for_every_episode(strategy):
    # One-step episodes: every reset draws its episode's cart mass under rollax's default
    # strategy; under `cached` (Playground's wrapper) each environment keeps its first.
    env = rollax.make(
        f"playground/{TASK}", num_envs=8, reset_strategy=strategy, randomization_fn=_cart_mass
    )
    params = env.default_params.replace(max_episode_steps=1)
    state, _, drawn = _one_step_episodes(env, lambda s: s.core.info[PHYSICS]["body_mass"][:, 1])
    first = drawn[0]  # drawn: (episodes, environments)
    assert ((drawn >= 0.5) & (drawn <= 2.0)).all()  # the cart weighs 1
    assert len(np.unique(first)) == 8  # every environment its own first draw
    if strategy == "cached":
        np.testing.assert_array_equal(drawn, np.broadcast_to(first, drawn.shape))
        return
    assert len(np.unique(drawn)) == drawn.size == 8 * 7
    # An episode steps with its physics: as the same masses given as params do.
    given = rollax.make(f"playground/{TASK}", num_envs=8, model_params=("body_mass",))
    info = {k: v for k, v in state.core.info.items() if k != PHYSICS}
    plain = state.replace(core=state.core.replace(info=info))
    mass = state.core.info[PHYSICS]["body_mass"]
    push = jnp.ones((8, 1))
    # Under jit: MJX's step run op by op took 14 of this test's 34 s on 2 CPU cores.
    _, mine = jax.jit(env.step)(state, push, params.replace(max_episode_steps=100))
    theirs_params = given.default_params.replace(model={"body_mass": mass})
    _, theirs = jax.jit(given.step)(plain, push, theirs_params)
    np.testing.assert_allclose(mine.obs, theirs.obs, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="Playground has no domain randomizer for playground/"):
        rollax.make(f"playground/{TASK}", randomization_fn=True)


@pytest.mark.filterwarnings("ignore::UserWarning")  # Gymnasium's advice on infinite bounds
def test_the_checker_and_the_gymnasium_adapter_pass_on_a_playground_task():
    # The checker: declarations, purity, params as data, fresh keys, a rollout, and render
    # (MuJoCo's renderer through a host callback, under jit).
    from rollax.envs import check_env

    assert check_env(f"playground/{TASK}", steps=16) == ()
    from gymnasium.utils.env_checker import check_env as gymnasium_check

    from rollax.adapters.gymnasium import RollaxEnv

    single = RollaxEnv(f"playground/{TASK}", render_mode="rgb_array")
    gymnasium_check(single)  # seeding, spaces, steps and render
    single.reset(seed=0)
    assert single.render().shape == (240, 320, 3)


def test_an_episode_is_recorded_with_mujocos_renderer():
    # What `rollax eval --video` records: every picture from the chosen camera, the cart
    # moving across them, the first one the reset state's.
    from rollax.agents.ppo import PPOConfig, make_ppo
    from rollax.runs._video import record_episode

    agent = make_ppo(
        PPOConfig(num_seeds=1, num_envs=2, num_steps=8, num_minibatches=1, total_steps=16),
        f"playground/{TASK}",
        render_size=(48, 64),
        render_camera="fixed",
    )
    state = agent.init(jax.random.key(0))
    state = state.replace(env_params=state.env_params.replace(max_episode_steps=6))
    frames, _ = record_episode(agent, state, jax.random.key(1))
    assert frames.shape == (7, 48, 64, 3) and frames.dtype == np.uint8
    assert len({frame.tobytes() for frame in frames}) == 7  # the scene changes every step
    env = rollax.make(f"playground/{TASK}", render_size=(48, 64), render_camera="fixed")
    with pytest.raises(ValueError, match="render_camera='side': playground/CartpoleBalance's "
                       "cameras are 'fixed', 'lookatcart'"):  # fmt: skip
        rollax.make(f"playground/{TASK}", render_camera="side")
    with pytest.raises(ValueError, match=r"render_size=\(0, 64\): give \(height, width\)"):
        rollax.make(f"playground/{TASK}", render_size=(0, 64))
    # The reset under jit: MJX's reset run op by op took 18 s on 2 CPU cores.
    assert env.render(jax.jit(env.reset)(jax.random.key(2))[0]).shape == (48, 64, 3)


def test_the_dm_control_suite_is_listed():
    ids = rollax.suite_envs()
    assert {"playground/CartpoleBalance", "playground/WalkerWalk"} <= set(ids)
    assert sum(i.startswith("playground/") for i in ids) >= 25


@pytest.mark.parametrize("task", ["WalkerWalk", "CheetahRun"])
def test_the_heavy_tasks_ppo_presets_are_playground_s_published_batch(task):
    # A GPU's preset, trained by benchmarks/gpu.py: Playground's own settings for the task
    # (brax_ppo_config), but for the reward scale (rollax's Playground presets keep values
    # near 20), and its budget in whole iterations.
    from mujoco_playground.config import dm_control_suite_params

    from rollax.agents.ppo import PRESETS

    theirs = dm_control_suite_params.brax_ppo_config(task)
    ours = PRESETS[f"playground/{task}"]
    iteration = theirs.batch_size * theirs.num_minibatches * theirs.unroll_length
    assert ours.num_envs == theirs.num_envs
    assert ours.steps_per_iteration == iteration
    assert (ours.num_epochs, ours.num_minibatches) == (
        theirs.num_updates_per_batch,
        theirs.num_minibatches,
    )
    assert (ours.learning_rate, ours.gamma, ours.ent_coef) == (
        theirs.learning_rate,
        theirs.discounting,
        theirs.entropy_cost,
    )
    assert ours.normalize_obs == theirs.normalize_observations
    assert ours.action_repeat == theirs.action_repeat
    assert ours.total_steps == theirs.num_timesteps // iteration * iteration


@pytest.mark.slow
def test_ppo_preset_balances_the_cartpole_on_most_seeds():
    # Playground's CartpoleBalance with rollax's fresh resets: 4 seeds in one program (a
    # random policy's episodes return about 350 of 1,000; the preset's 4 seeds of 786,432
    # steps ended at 983 to 999, about 2 minutes on 2 CPU cores with compiling).
    from rollax.agents.ppo import PRESETS, make_ppo

    config = PRESETS[f"playground/{TASK}"].replace(num_seeds=4, total_steps=786_432)
    agent = make_ppo(config, f"playground/{TASK}")
    state, metrics = agent.run(agent.init(jax.random.key(0)), config.total_steps)
    returns = np.asarray(agent.evaluate(state, jax.random.key(1), num_episodes=8)).mean(axis=1)
    assert int(metrics["env_steps"]) == config.total_steps
    assert (returns >= 900).sum() >= 3, returns
