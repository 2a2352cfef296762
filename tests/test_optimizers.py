"""The optimizer is the agent's choice: optax's optimizers and schedules, with per-seed values
as data.

- Each choice trains PPO on CartPole, and a checkpoint of it continues bit for bit.
- The transformation built from the seed's values is optax's own optimizer (RMSProp's
  momentum after its scaling, as PyTorch's); the schedules are optax's schedules.
- Changing a seed's learning rate (or any optimizer value) never compiles again.
- Any optax transformation a factory returns (a chain, MultiSteps around it) trains PPO and
  DQN, keeps every wrapper's state through a checkpoint, and takes each member's learning
  rate as data.
- A bad choice is a message naming the field before anything compiles.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from _optax_factories import accumulated, clipped_adabelief
from rollax.agents.dqn import DQNConfig, make_dqn
from rollax.agents.ppo import PPOConfig, make_ppo
from rollax.agents.sac import SACConfig
from rollax.checkpoints import Checkpointer
from rollax.training import (
    SCHEDULES,
    Optimizer,
    OptimizerConfig,
    OptimizerHyperParams,
    optimizer_values,
    schedule_multiplier,
    stretch_schedule,
)

# A learning rate that trains PPO on CartPole with each optimizer (Lion's sign updates take a
# smaller one, as its authors advise; SGD with momentum a larger one).
LEARNING_RATES = {
    "adam": 2.5e-3,
    "adamw": 2.5e-3,
    "radam": 2.5e-3,
    "rmsprop": 1e-3,
    "lion": 2.5e-4,
    "sgd": 5e-2,
}
EXTRA = {"adamw": {"weight_decay": 1e-4}, "lion": {"weight_decay": 1e-4},
         "sgd": {"momentum": 0.9}, "rmsprop": {"momentum": 0.5}}  # fmt: skip
# rollax holds the optimizers' constants (Adam's betas) as float32 arrays, as
# optax.inject_hyperparams does; optax's stock optimizers take them as Python floats, which
# rounds Adam's bias corrections otherwise (1 - 0.999 in float32 is 1.3e-5 off).
RTOL = 2e-5
SMALL = PPOConfig(num_envs=8, num_steps=64, num_epochs=4, num_minibatches=4, num_seeds=2,
                  total_steps=32_768, hidden_sizes=(32, 32))  # fmt: skip


def _hp(config: OptimizerConfig, schedule_steps: int) -> OptimizerHyperParams:
    values = optimizer_values(config, schedule_steps)
    return OptimizerHyperParams(**{k: jnp.float32(v) for k, v in values.items()})


def _leaves_equal(a, b) -> None:
    def raw(x):
        if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
            return np.asarray(jax.random.key_data(x))
        return np.asarray(x)

    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(raw(x), raw(y))


@pytest.mark.parametrize("name", sorted(LEARNING_RATES))
def test_every_optimizer_trains_ppo_on_cartpole_and_resumes_bit_for_bit(name, tmp_path):
    config = SMALL.replace(
        optimizer=name, learning_rate=LEARNING_RATES[name], **EXTRA.get(name, {})
    )
    agent = make_ppo(config, "CartPole-v1")
    start = agent.init(jax.random.key(0))
    half, _ = agent.run(start, config.total_steps // 2)
    checkpoints = Checkpointer(tmp_path / "ckpt")
    checkpoints.save(1, half, {})
    restored, _ = checkpoints.restore(jax.eval_shape(agent.init, jax.random.key(0)))
    resumed, _ = agent.run(restored, config.total_steps // 2)
    whole, _ = agent.run(half, config.total_steps // 2)
    _leaves_equal(whole, resumed)
    returns = np.asarray(agent.evaluate(whole, jax.random.key(1), 16)).mean(axis=1)
    # Untrained, the policy ends episodes after about 22 steps. When set, 4 seeds of each
    # ended at 156 to 500 (seeds 0 and 1, these: 269 to 500).
    assert returns.mean() > 150, (name, returns)


def _resumes_bit_for_bit(agent, steps: int, tmp_path) -> object:
    """Train ``steps`` in two halves, through a checkpoint and without; both must be equal."""
    half, _ = agent.run(agent.init(jax.random.key(0)), steps // 2)
    checkpoints = Checkpointer(tmp_path / "ckpt")
    checkpoints.save(1, half, {})
    restored, _ = checkpoints.restore(jax.eval_shape(agent.init, jax.random.key(0)))
    resumed, _ = agent.run(restored, steps // 2)
    whole, _ = agent.run(half, steps // 2)
    _leaves_equal(whole, resumed)
    return whole


def _states_of(tree, kind) -> list:
    """The ``kind`` nodes of an optimizer state (``optax.MultiStepsState``, ...)."""
    return [x for x in jax.tree.leaves(tree, is_leaf=lambda x: isinstance(x, kind))
            if isinstance(x, kind)]  # fmt: skip


@pytest.mark.parametrize("factory", [clipped_adabelief, accumulated])
def test_any_optax_transformation_trains_ppo_and_resumes_bit_for_bit(factory, tmp_path):
    config = SMALL.replace(optimizer=factory, learning_rate=2.5e-3)
    agent = make_ppo(config, "CartPole-v1")
    whole = _resumes_bit_for_bit(agent, config.total_steps, tmp_path)
    # The factory's whole state: the wrappers' (MultiSteps' accumulated gradients) and
    # AdaBelief's moments.
    assert _states_of(whole.opt_state, optax.ScaleByBeliefState)
    assert bool(_states_of(whole.opt_state, optax.MultiStepsState)) == (factory is accumulated)
    returns = np.asarray(agent.evaluate(whole, jax.random.key(1), 16)).mean(axis=1)
    assert returns.mean() > 150, returns


def test_any_optax_transformation_trains_dqn_and_resumes_bit_for_bit(tmp_path):
    config = DQNConfig(num_envs=4, learning_starts=256, batch_size=32, buffer_size=2048,
                       hidden_sizes=(32,), total_steps=2048,
                       optimizer="_optax_factories:accumulated")  # by its import path  # fmt: skip
    whole = _resumes_bit_for_bit(make_dqn(config, "CartPole-v1"), config.total_steps, tmp_path)
    (multi,) = _states_of(whole.learner.opt_state, optax.MultiStepsState)
    assert int(multi.gradient_step[0]) > 0  # the inner optimizer stepped (the seed axis)


def test_a_factory_s_learning_rate_is_each_member_s_own_in_one_program():
    # Two members of one seed (a sweep over the learning rate) differ only by their rate:
    # each trains as that rate alone does.
    base = PPOConfig(num_envs=4, num_steps=16, hidden_sizes=(16,), total_steps=256,
                     optimizer=clipped_adabelief)  # fmt: skip
    swept = make_ppo(base.replace(sweep=("learning_rate=1e-3,1e-2",)), "CartPole-v1")
    both, _ = swept.run(swept.init(jax.random.key(0)), 256)
    np.testing.assert_allclose(both.hparams.learning_rate, [1e-3, 1e-2])
    for member, lr in enumerate((1e-3, 1e-2)):
        alone = make_ppo(base.replace(learning_rate=lr), "CartPole-v1")
        one, _ = alone.run(alone.init(jax.random.key(0)), 256)
        for a, b in zip(jax.tree.leaves(both.params), jax.tree.leaves(one.params), strict=True):
            np.testing.assert_allclose(np.asarray(a)[member], np.asarray(b)[0], rtol=1e-4,
                                       atol=1e-6)  # fmt: skip
    first = jax.tree.leaves(both.params)[0]
    assert not np.allclose(first[0], first[1])


def _reference(name: str, lr: float) -> optax.GradientTransformation:
    """optax's stock optimizer for ``name`` (RMSProp's momentum after its scaling, as PyTorch
    and rollax apply it)."""
    if name == "adam":
        return optax.adam(lr, eps=1e-8)
    if name == "adamw":
        return optax.adamw(lr, eps=1e-8, weight_decay=0.01)
    if name == "radam":
        return optax.radam(lr, eps=1e-8)
    if name == "lion":
        return optax.lion(lr, weight_decay=0.01)
    if name == "sgd":
        return optax.sgd(lr, momentum=0.9)
    return optax.chain(
        optax.scale_by_rms(decay=0.9, eps=1e-8), optax.trace(decay=0.9), optax.scale(-lr)
    )


@pytest.mark.parametrize("name", sorted(LEARNING_RATES))
def test_the_transformation_is_optax_s_optimizer(name):
    extra = {"adamw": {"weight_decay": 0.01}, "lion": {"weight_decay": 0.01},
             "sgd": {"momentum": 0.9}, "rmsprop": {"momentum": 0.9}}.get(name, {})  # fmt: skip
    config = OptimizerConfig(optimizer=name, learning_rate=0.01, **extra)
    config.validate_optimizer()
    optimizer, reference = Optimizer.of(config), _reference(name, 0.01)
    hp = _hp(config, 0)
    params = {"w": jnp.array([1.0, -2.0, 3.0]), "b": jnp.array(0.5)}
    ours, theirs = params, params
    state, ref_state = optimizer.init(params), reference.init(params)
    for step in range(5):
        grads = jax.tree.map(lambda p, s=step: jnp.sin(p * (s + 1)), ours)
        updates, state = optimizer.transformation(hp, jnp.int32(step)).update(grads, state, ours)
        ours = optax.apply_updates(ours, updates)
        grads = jax.tree.map(lambda p, s=step: jnp.sin(p * (s + 1)), theirs)
        with jax.numpy_dtype_promotion("standard"):  # optax mixes int32 counts and floats
            ref_updates, ref_state = reference.update(grads, ref_state, theirs)
        theirs = optax.apply_updates(theirs, ref_updates)
    for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(theirs), strict=True):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=1e-7)


def test_the_norm_bound_and_element_clipping_are_optax_s():
    # SGD, whose step is proportional to the gradient (Adam's first step is not).
    config = OptimizerConfig(optimizer="sgd", learning_rate=0.1, max_grad_norm=0.2)
    optimizer = Optimizer.of(config, clip_value=0.3)
    reference = optax.chain(optax.clip(0.3), optax.clip_by_global_norm(0.2), optax.sgd(0.1))
    params, grads = jnp.array([1.0, 2.0]), jnp.array([4.0, -0.1])
    ours, _ = optimizer.transformation(_hp(config, 0), jnp.int32(0)).update(
        grads, optimizer.init(params), params
    )
    with jax.numpy_dtype_promotion("standard"):
        theirs, _ = reference.update(grads, reference.init(params), params)
    np.testing.assert_allclose(ours, theirs, rtol=RTOL)
    # A member at max_grad_norm = 0 beside bounded ones is unbounded.
    unbounded = _hp(dataclasses.replace(config, max_grad_norm=0.0), 0)
    big = jnp.array([40.0, -30.0])
    plain, _ = optax.sgd(1.0).update(big, optax.sgd(1.0).init(params))
    bounded_sgd = Optimizer(kind="sgd", bounded=True)
    one = unbounded.replace(learning_rate=jnp.float32(1.0))
    mine, _ = bounded_sgd.transformation(one, jnp.int32(0)).update(
        big, bounded_sgd.init(params), params
    )
    np.testing.assert_allclose(mine, plain)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_schedules_are_optax_s_over_the_budget(schedule):
    span, warmup = 200, 0.25
    config = OptimizerConfig(
        lr_schedule=schedule, warmup_fraction=warmup if schedule == "warmup_cosine" else 0.0
    )
    hp = _hp(config, span)
    reference = {
        "constant": optax.constant_schedule(1.0),
        "linear": optax.linear_schedule(1.0, 0.0, span),
        "cosine": optax.cosine_decay_schedule(1.0, span),
        "warmup_cosine": optax.warmup_cosine_decay_schedule(0.0, 1.0, int(warmup * span), span),
    }[schedule]
    for step in (0, 1, 37, 50, 51, 120, 199, 200, 260):
        ours = schedule_multiplier(hp, jnp.int32(step))
        np.testing.assert_allclose(ours, reference(step), atol=1e-6, err_msg=f"step {step}")
    # Resuming to twice the budget stretches the schedule (a constant one stays constant).
    stretched = stretch_schedule(hp, 2 * span)
    assert float(stretched.schedule_steps) == 2 * span
    np.testing.assert_allclose(
        schedule_multiplier(stretched, jnp.int32(2 * 37)), reference(37), atol=1e-6
    )


def test_a_seed_s_optimizer_values_change_without_compiling_again():
    compiled = []

    def on_event(name: str, seconds: float, fun_name: str = "", **kwargs) -> None:
        if "backend_compile" in name and fun_name == "jit(run_iterations)":
            compiled.append(fun_name)

    config = PPOConfig(num_envs=4, num_steps=16, hidden_sizes=(16,), num_seeds=2,
                       optimizer="rmsprop", lr_schedule="cosine", total_steps=1024)  # fmt: skip
    agent = make_ppo(config, "CartPole-v1")
    state, _ = agent.run(agent.init(jax.random.key(0)), 64)
    jax.monitoring.register_event_duration_secs_listener(on_event)
    hp = state.hparams
    changed = state.replace(
        hparams=hp.replace(
            learning_rate=hp.learning_rate.at[1].multiply(10.0),
            momentum=hp.momentum.at[0].set(0.9),
            lr_schedule=hp.lr_schedule.at[1].set(SCHEDULES.index("linear")),
        )
    )
    same, _ = agent.run(state, 64)
    other, _ = agent.run(changed, 64)
    assert compiled == []
    # Seed 0's momentum and seed 1's rate and schedule changed what each trained.
    for a, b in zip(jax.tree.leaves(same.params), jax.tree.leaves(other.params), strict=True):
        assert not np.array_equal(np.asarray(a)[0], np.asarray(b)[0])
        assert not np.array_equal(np.asarray(a)[1], np.asarray(b)[1])


BAD = [
    (PPOConfig(weight_decay=0.01),
     r"PPOConfig.weight_decay=0.01 applies to the optimizers \['adamw', 'lion'\] and to "
     r"factories that take weight_decay, not optimizer='adam'"),
    (DQNConfig(momentum=0.9),
     r"DQNConfig.momentum=0.9 applies to the optimizers \['sgd', 'rmsprop'\]"),
    (SACConfig(optimizer="adagrad"),
     r"SACConfig.optimizer must be one of \['adam', 'adamw', 'rmsprop', 'radam', 'lion', "
     r"'sgd'\] or an optax GradientTransformation factory \(MODULE:NAME, e.g. "
     r"'optax:adabelief'\), got 'adagrad'"),
    (PPOConfig(optimizer="optax:adagrd"), r"PPOConfig.optimizer='optax:adagrd' does not import"),
    (PPOConfig(optimizer="optax:clip_by_global_norm"),
     r"optimizer='optax:clip_by_global_norm' takes no learning_rate: a factory is called with"),
    (PPOConfig(optimizer="optax:adabelief", momentum=0.9),
     r"momentum=0.9 applies to the optimizers \['sgd', 'rmsprop'\] and to factories that take "
     r"momentum, not optimizer='optax:adabelief'"),
    (PPOConfig(lr_schedule="step"), r"PPOConfig.lr_schedule must be one of"),
    (PPOConfig(warmup_fraction=0.1),
     r"warmup_fraction=0.1 applies to lr_schedule='warmup_cosine', not 'linear'"),
    (PPOConfig(lr_schedule="warmup_cosine", warmup_fraction=1.0),
     r"PPOConfig.warmup_fraction must be below 1, got 1.0"),
    (PPOConfig(max_grad_norm=-1.0), r"max_grad_norm"),
    (DQNConfig(learning_rate=0.0), r"learning_rate"),
]  # fmt: skip


@pytest.mark.parametrize(("config", "message"), BAD)
def test_a_bad_optimizer_choice_is_a_message(config, message):
    with pytest.raises(ValueError, match=message):
        config.validate()


def test_a_factory_without_an_import_path_is_refused_before_a_run_starts(tmp_path):
    from rollax.runs import RunConfig, train
    from rollax.training import ConfigError

    config = PPOConfig(optimizer=lambda learning_rate: optax.adabelief(learning_rate))
    with pytest.raises(ConfigError, match=r"PPOConfig.optimizer=<function .*> cannot be written "
                       r"to a run's config.json: it has no import path"):  # fmt: skip
        train(config, RunConfig(run_dir=str(tmp_path / "run"), progress=False))
    assert not (tmp_path / "run").exists()
