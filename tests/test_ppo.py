"""PPO: learning CartPole, compiling once, exact budgets, resuming in pieces, config errors."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import rollax
from rollax.agents.ppo import PPOConfig, make_trainer
from rollax.networks import ActorCritic

SMALL = PPOConfig(num_envs=4, num_steps=16, total_steps=4096, num_epochs=2, num_minibatches=2)


@pytest.mark.slow
def test_ppo_solves_cartpole():
    config = PPOConfig(num_seeds=2)
    trainer = make_trainer(config, "CartPole-v1")
    state = trainer.init(jax.random.key(0))
    state, metrics = trainer.run(state, config.total_steps)
    returns = np.asarray(trainer.evaluate(state, jax.random.key(1), num_episodes=64))
    assert returns.shape == (2, 64)
    assert returns.mean(axis=1).min() >= 475, returns.mean(axis=1)
    assert int(metrics["env_steps"]) == config.total_steps


@pytest.mark.slow
def test_ppo_solves_pendulum_with_its_preset_on_a_small_budget():
    from rollax.agents.ppo.config import PRESETS

    config = PRESETS["Pendulum-v1"].replace(num_seeds=2, total_steps=196_608)
    trainer = make_trainer(config, "Pendulum-v1")
    state = trainer.init(jax.random.key(0))
    state, _ = trainer.run(state, config.total_steps)
    returns = np.asarray(trainer.evaluate(state, jax.random.key(1), num_episodes=64))
    assert returns.mean(axis=1).min() >= -250, returns.mean(axis=1)


def test_run_compiles_once_across_calls_sizes_and_env_params():
    trainer = make_trainer(SMALL, "CartPole-v1")
    state = trainer.init(jax.random.key(0))
    state, _ = trainer.run(state, 64)
    state, _ = trainer.run(state, 192)  # a different number of updates is data
    # A curriculum step: new environment params, same program.
    state = state.replace(env_params=state.env_params.replace(gravity=12.0, max_episode_steps=50))
    state, metrics = trainer.run(state, 64)
    assert int(metrics["env_steps"]) == 64 + 192 + 64
    assert _jit_cache_size(trainer) == 1


def test_warmup_compiles_everything_beforehand():
    compiled: list[str] = []
    listening = [False]

    def on_event(name: str, seconds: float, fun_name: str = "", **kwargs) -> None:
        programs = ("jit(init)", "jit(run_updates)", "jit(run_episodes)")
        if listening[0] and "backend_compile" in name and fun_name in programs:
            compiled.append(fun_name)

    jax.monitoring.register_event_duration_secs_listener(on_event)
    trainer = make_trainer(SMALL, "CartPole-v1")
    trainer.warmup([(4, True), (4, False)])
    listening[0] = True
    state = trainer.init(jax.random.key(0))
    state, _ = trainer.run(state, 64)
    state, _ = trainer.run(state, 128)
    returns = trainer.evaluate(state, jax.random.key(1), 4, False)
    listening[0] = False
    assert returns.shape == (1, 4)
    assert compiled == []  # the training programs all came from warmup


def _jit_cache_size(trainer):
    """Compilations of the trainer's jitted run program."""
    for cell in trainer.run.__closure__:
        fn = cell.cell_contents
        if hasattr(fn, "_cache_size"):
            return fn._cache_size()
    raise AssertionError("no jitted program in run's closure")


def test_training_in_pieces_equals_training_at_once():
    trainer = make_trainer(SMALL, "CartPole-v1")
    start = trainer.init(jax.random.key(3))
    whole, m_whole = trainer.run(start, 256)
    half, _ = trainer.run(start, 128)
    half, m_half = trainer.run(half, 128)
    for a, b in zip(jax.tree.leaves(whole.params), jax.tree.leaves(half.params), strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(whole.obs, half.obs)
    assert int(m_whole["env_steps"]) == int(m_half["env_steps"]) == 256


def test_seeds_train_independently():
    # Seed 1 gets another learning rate and entropy weight; seeds 0 and 2 must train exactly
    # as they do without the change. (Seeds share one environment batch; a reset strategy
    # that resets environment by environment keeps them apart bit for bit. "pool" serves
    # fresh states by rank over the whole batch: the same distribution, not the same bits.)
    config = SMALL.replace(num_seeds=3)
    trainer = make_trainer(config, "CartPole-v1", reset_strategy="on_done")
    state = trainer.init(jax.random.key(0))
    hp = state.hparams
    changed = state.replace(
        hparams=hp.replace(
            learning_rate=hp.learning_rate.at[1].multiply(10.0), ent_coef=hp.ent_coef.at[1].set(0.1)
        )
    )
    base, base_metrics = trainer.run(state, 256)
    other, other_metrics = trainer.run(changed, 256)
    for a, b in zip(jax.tree.leaves(base.params), jax.tree.leaves(other.params), strict=True):
        a, b = np.asarray(a), np.asarray(b)
        np.testing.assert_array_equal(a[[0, 2]], b[[0, 2]])
        assert not np.array_equal(a[1], b[1])
    for name in ("episode_return", "policy_loss", "entropy"):
        np.testing.assert_array_equal(
            np.asarray(base_metrics[name])[[0, 2]], np.asarray(other_metrics[name])[[0, 2]]
        )
    assert float(other_metrics["policy_loss"][1]) != float(base_metrics["policy_loss"][1])


def test_pendulum_runs_with_continuous_actions():
    config = SMALL.replace(normalize_obs=True)
    trainer = make_trainer(config, "Pendulum-v1")
    state = trainer.init(jax.random.key(0))
    state, metrics = trainer.run(state, 128)
    assert np.isfinite(np.asarray(metrics["value_loss"])).all()
    assert float(state.obs_stats.count[0]) > 100  # the normalizer saw the rollouts


def test_budget_and_config_errors_come_before_compiling():
    trainer = make_trainer(SMALL, "CartPole-v1")
    state = trainer.init(jax.random.key(0))
    with pytest.raises(ValueError, match=r"num_steps=100 is not a whole number .* use 64 or 128"):
        trainer.run(state, 100)
    with pytest.raises(ValueError, match=r"total_steps=1000 .* use 960 or 1024"):
        make_trainer(SMALL.replace(total_steps=1000), "CartPole-v1")
    with pytest.raises(ValueError, match=r"num_minibatches=5 must divide .* 64"):
        make_trainer(SMALL.replace(num_minibatches=5), "CartPole-v1")
    with pytest.raises(ValueError, match=r"learning_rate must be positive, got -0.1"):
        make_trainer(SMALL.replace(learning_rate=-0.1), "CartPole-v1")
    with pytest.raises(ValueError, match=r"num_envs must be a positive integer, got 0"):
        make_trainer(SMALL.replace(num_envs=0), "CartPole-v1")
    with pytest.raises(ValueError, match=r"gamma must lie in \[0, 1\], got 1.5"):
        make_trainer(SMALL.replace(gamma=1.5), "CartPole-v1")
    with pytest.raises(ValueError, match="Unknown environment id 'CartPol-v1'"):
        make_trainer(SMALL, "CartPol-v1")
    with pytest.raises(ValueError, match="needs same-step autoreset"):
        make_trainer(SMALL, rollax.make("CartPole-v1", num_envs=4, autoreset_mode="next_step"))


def test_rollout_bootstraps_every_step_from_the_value_of_its_true_successor():
    # Pendulum only truncates; with a 10-step limit a 16-step rollout crosses episode ends.
    trainer = make_trainer(SMALL, "Pendulum-v1")
    start = trainer.init(jax.random.key(2))
    start = start.replace(env_params=start.env_params.replace(max_episode_steps=10))
    _, rollout = trainer.collect(start)
    # Replay the same actions from the same environment state to get every final_obs.
    env_state, finals, ended = start.env_state, [], []
    for action in rollout.action:
        env_state, ts = trainer.env.step(env_state, action, start.env_params)
        finals.append(ts.final_obs)
        ended.append(ts.truncated)
    network = ActorCritic.for_space(trainer.env.action_space, SMALL.hidden_sizes, "tanh")
    params = jax.tree.map(lambda x: x[0], start.params)
    expected = network.apply(params, jnp.stack(finals))[2]
    assert bool(jnp.stack(ended).any())  # truncations happened inside the rollout
    np.testing.assert_allclose(rollout.next_value, expected, rtol=1e-5, atol=1e-5)
