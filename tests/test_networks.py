"""Networks: the LAPACK-free orthogonal initializer, the actor-critic's outputs, and the
one order of a recurrent step's arguments."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import rollax
from rollax.agents.ppo import PPOConfig, make_ppo
from rollax.networks import (
    ActorCritic,
    RecurrentActorCritic,
    RecurrentQNetwork,
    action_distribution,
    initial_carry,
    orthogonal,
)


@pytest.mark.parametrize("shape", [(4, 64), (64, 64), (64, 2), (64, 1), (3, 3, 8, 16)])
@pytest.mark.parametrize("scale", [1.0, 0.01])
def test_orthogonal_init_matches_jax_qr_based_initializer(shape, scale):
    key = jax.random.key(7)
    ours = orthogonal(scale)(key, shape)
    reference = jax.nn.initializers.orthogonal(scale)(key, shape)
    assert ours.shape == shape and ours.dtype == jnp.float32
    np.testing.assert_allclose(ours, reference, atol=2e-6 * scale)
    flat = np.asarray(ours).reshape(-1, shape[-1]) / scale
    gram = flat.T @ flat if flat.shape[0] >= flat.shape[1] else flat @ flat.T
    np.testing.assert_allclose(gram, np.eye(gram.shape[0]), atol=1e-5)


def test_ppo_init_has_no_lapack_call():
    # A batched QR runs on XLA:CPU's intra-op pool and can wait on it forever (a hang seen with
    # several seeds on 2 cores); PPO's initialization must not contain one.
    agent = make_ppo(
        PPOConfig(num_envs=4, num_steps=16, total_steps=4096, num_seeds=3), "CartPole-v1"
    )
    program = jax.jit(agent.init).lower(jax.random.key(0)).as_text()
    assert "custom_call" not in program


def test_orthogonal_rejects_vectors():
    with pytest.raises(ValueError, match="at least 2 dimensions, got"):
        orthogonal()(jax.random.key(0), (5,))


def test_actor_critic_shapes_for_discrete_and_box_spaces():
    for env_id, action_shape in (("CartPole-v1", (2,)), ("Pendulum-v1", (1,))):
        env = rollax.make(env_id)
        net = ActorCritic.for_space(env.action_space, (8,), "tanh")
        obs = jnp.zeros((5, *env.observation_space.shape), jnp.float32)
        params = net.init(jax.random.key(0), obs[0])
        out, log_std, value = net.apply(params, obs)
        assert out.shape == (5, *action_shape) and value.shape == (5,)
        assert log_std.shape == action_shape


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
def test_actor_critic_starts_near_uniform_with_separate_actor_and_critic(env_id):
    env = rollax.make(env_id)
    net = ActorCritic.for_space(env.action_space, (64, 64), "tanh")
    obs = jax.random.normal(jax.random.key(1), (256, *env.observation_space.shape))
    params = net.init(jax.random.key(0), obs[0])
    out, log_std, value = net.apply(params, obs)
    # The policy head starts small (orthogonal, scale 0.01): near-uniform logits, a mean
    # near zero with a unit standard deviation; the value head does not.
    assert float(jnp.abs(out).max()) < 0.05
    np.testing.assert_array_equal(log_std, np.zeros(log_std.shape))
    assert float(value.std()) > 0.1
    # The actor and the critic share no parameters: each output's gradient reaches only its
    # own torso and head.
    d_value = jax.grad(lambda p: net.apply(p, obs)[2].sum())(params)["params"]
    d_policy = jax.grad(lambda p: net.apply(p, obs)[0].sum())(params)["params"]
    for name in ("actor_torso", "actor_head"):
        assert all(float(jnp.abs(g).sum()) == 0 for g in jax.tree.leaves(d_value[name]))
        assert all(float(jnp.abs(g).sum()) > 0 for g in jax.tree.leaves(d_policy[name]))
    for name in ("critic_torso", "critic_head"):
        assert all(float(jnp.abs(g).sum()) == 0 for g in jax.tree.leaves(d_policy[name]))
        assert all(float(jnp.abs(g).sum()) > 0 for g in jax.tree.leaves(d_value[name]))


def test_action_distributions_match_scipy():
    import scipy.stats

    logits = jnp.asarray([[0.3, -1.2, 2.0], [0.0, 0.0, 0.0]], jnp.float32)
    dist = action_distribution(logits, jnp.zeros(3, jnp.float32), discrete=True)
    p = scipy.special.softmax(np.asarray(logits, np.float64), axis=-1)
    np.testing.assert_allclose(dist.log_prob(jnp.asarray([2, 1])), np.log([p[0, 2], p[1, 1]]),
                               rtol=1e-5)  # fmt: skip
    np.testing.assert_allclose(dist.entropy(), scipy.stats.entropy(p, axis=-1), rtol=1e-5)
    np.testing.assert_array_equal(dist.mode(), [2, 0])
    draws = np.asarray(dist.sample(jax.random.key(0)))
    assert draws.shape == (2,)

    mean = jnp.asarray([[0.5, -1.0]], jnp.float32)
    log_std = jnp.asarray([0.2, -0.7], jnp.float32)
    dist = action_distribution(mean, log_std, discrete=False)
    x = jnp.asarray([[0.1, -0.4]], jnp.float32)
    reference = scipy.stats.norm(np.asarray(mean), np.exp(np.asarray(log_std)))
    np.testing.assert_allclose(dist.log_prob(x), reference.logpdf(np.asarray(x)).sum(-1),
                               rtol=1e-5)  # fmt: skip
    np.testing.assert_allclose(dist.entropy(), reference.entropy().sum(-1), rtol=1e-5)
    np.testing.assert_array_equal(dist.mode(), mean)
    action, log_prob = dist.sample_and_log_prob(jax.random.key(0))
    np.testing.assert_allclose(log_prob, dist.log_prob(action), rtol=1e-6)


def test_trainer_pieces_compose_with_jax_transformations():
    agent = make_ppo(PPOConfig(num_envs=4, num_steps=16, total_steps=4096), "CartPole-v1")
    direct = agent.init(jax.random.key(0))
    nested = jax.jit(agent.init)(jax.random.key(0))
    with_params = agent.init(jax.random.key(0), env_params=agent.env.default_params)
    assert int(with_params.env_steps) == 0
    for a, b in zip(jax.tree.leaves(direct.params), jax.tree.leaves(nested.params), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-6)
    seeds = jax.vmap(agent.init)(jax.random.split(jax.random.key(0), 2))
    assert seeds.env_steps.shape == (2,)
    shapes = jax.eval_shape(lambda s, k: agent.evaluate(s, k, 4, True), direct, jax.random.key(1))
    assert shapes.shape == (1, 4)


@pytest.mark.parametrize(
    "module",
    [
        RecurrentQNetwork(num_actions=3, cell="gru", cell_size=4, hidden_sizes=(4,)),
        RecurrentActorCritic(action_dim=2, discrete=True, cell="lstm", cell_size=4,
                             hidden_sizes=(4,), head_size=4),
    ],
)  # fmt: skip
def test_a_recurrent_step_takes_obs_carry_first_and_refuses_them_swapped(module):
    obs, first = jnp.ones((2, 5)), jnp.array([True, False])
    carry = initial_carry(module.cell, module.cell_size, 2)
    params = module.init(jax.random.key(0), obs, carry, first)
    new_carry, _ = module.apply(params, obs, carry, first)
    assert jax.tree.structure(new_carry) == jax.tree.structure(carry)
    # Swapped, the step would reset on a float carry and carry a bool array on.
    with pytest.raises(TypeError, match=r"takes \(obs, carry, first\).*swapped"):
        module.apply(params, obs, first, carry)
