"""PQN as an on-policy learner: ``make_pqn(config, env) -> PQN``.

Parallel Q-learning (Gallici et al., 2024): ε-greedy rollouts of many environments, Q(λ)
targets over each rollout from the greedy Q-values the rollout saw, then epochs of
minibatches of the squared TD error, with no replay buffer and no target network. The
on-policy driver (:mod:`rollax.agents`) does the rollout, the bootstraps (a truncated
episode's from its true final observation, under the carry of the episode that ended) and
the epochs; PQN gives it its actions, values, targets and loss.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

from rollax._struct import pytree_dataclass
from rollax.agents._exploration import epsilon_greedy, linear_epsilon
from rollax.agents._onpolicy import (
    OnPolicyAgent,
    OnPolicyLearner,
    OnPolicyState,
    Rollout,
    build_onpolicy_agent,
)
from rollax.agents.losses import q_learning_loss
from rollax.agents.pqn.config import PQNConfig
from rollax.envs import VecEnv
from rollax.networks import q_network
from rollax.ops import lambda_returns
from rollax.spaces import Discrete
from rollax.training import Optimizer, OptimizerHyperParams, optimizer_values, shard_env
from rollax.types import PRNGKey

__all__ = ["PQN", "PQNHyperParams", "epsilon", "make_pqn", "pqn_targets"]


@pytree_dataclass
class PQNHyperParams(OptimizerHyperParams):
    """Hyperparameters as data (one value per seed): changing them does not recompile.

    The optimizer's (:class:`rollax.training.OptimizerHyperParams`), and:

    Attributes:
        gamma: Discount.
        td_lambda: λ of the Q(λ) targets.
        exploration_start: Epsilon at the start.
        exploration_end: Epsilon after the schedule.
        exploration_fraction: Fraction of the budget's updates (``schedule_steps``) over
            which epsilon decays.
    """

    gamma: jax.Array
    td_lambda: jax.Array
    exploration_start: jax.Array
    exploration_end: jax.Array
    exploration_fraction: jax.Array


def hyperparams(config: PQNConfig) -> PQNHyperParams:
    """One seed's :class:`PQNHyperParams` for ``config``, as Python numbers."""
    return PQNHyperParams(
        **optimizer_values(config, config.updates_in_budget),
        gamma=config.gamma,
        td_lambda=config.td_lambda,
        exploration_start=config.exploration_start,
        exploration_end=config.exploration_end,
        exploration_fraction=config.exploration_fraction,
    )


def epsilon(hp: PQNHyperParams, updates: jax.Array) -> jax.Array:
    """The exploration rate after ``updates`` updates.

    Linear over ``exploration_fraction`` of the budget's updates (stretched with it on
    resume), then constant.
    """
    span = jnp.maximum(hp.exploration_fraction * hp.schedule_steps, 1.0)
    progress = jnp.asarray(updates).astype(jnp.float32) / span
    return linear_epsilon(hp.exploration_start, hp.exploration_end, progress)


def pqn_targets(hp: PQNHyperParams, data: Rollout) -> jax.Array:
    """Q(λ) targets of a rollout, float32 ``(T, E)``.

    ``data.value`` is each observation's greedy Q-value and ``data.next_value`` its true
    successor's (a final observation's where an episode ended), both from the rollout's
    parameters: ``G_t = r_t + gamma (1 - terminated_t) [(1 - λ) next_value_t + λ G_{t+1}]``,
    with the λ-mix cut at every episode end and at the rollout's last step
    (:func:`rollax.ops.lambda_returns`).
    """
    return lambda_returns(
        data.reward,
        data.value,
        data.next_value,
        data.terminated,
        data.truncated,
        hp.gamma,
        hp.td_lambda,
    )


@dataclasses.dataclass(frozen=True, eq=False)
class PQN(OnPolicyAgent):
    """PQN as an :class:`~rollax.training.Agent`, plus its rollout and Q-network.

    Attributes:
        collect: ``state -> (state, rollout)``: one rollout without an update, a
            :class:`~rollax.agents.Rollout` with leaves ``(num_steps, num_seeds * num_envs,
            ...)``; ``value`` holds the greedy Q-values, ``next_value`` their successors'.
        network: The Q-network (a :class:`~rollax.networks.Network`):
            ``apply(params, obs, carry, first) -> (carry, q)``.
    """


def pqn_learner(config: PQNConfig, network: Any, obs_spec: Any) -> OnPolicyLearner:
    """PQN's part of the on-policy driver: ε-greedy actions, Q(λ) targets, the TD loss."""

    def explore(state: OnPolicyState, outputs: tuple, key: PRNGKey) -> tuple:
        return epsilon_greedy(outputs[0], key, epsilon(state.hparams, state.updates)), ()

    def act(state: OnPolicyState, outputs: tuple, key: PRNGKey, deterministic: bool) -> jax.Array:
        eps = jnp.where(deterministic, 0.0, state.hparams.exploration_end)
        return epsilon_greedy(outputs[0], key, eps)

    def loss(hp: PQNHyperParams, outputs: tuple, steps: tuple) -> tuple:
        q, (action, target) = outputs[0], steps
        q = q.reshape(-1, q.shape[-1])  # sequences (L, S, A) too
        value, _ = q_learning_loss(q, action.reshape(-1), target.reshape(-1), loss="mse")
        return value, (value, jnp.take_along_axis(q, action.reshape(-1, 1), -1).mean())

    return OnPolicyLearner(
        network=network,
        obs_spec=obs_spec,
        optimizer=Optimizer.of(config),
        hyperparams=hyperparams,
        explore=explore,
        act=act,
        value=lambda outputs: outputs[0].max(axis=-1),
        targets=lambda hp, data: (data.action, pqn_targets(hp, data)),
        loss=loss,
        metric_names=("td_loss", "q_value"),
    )


def make_pqn(config: PQNConfig, env: VecEnv | str, **make_options: Any) -> PQN:
    """Build PQN for an environment with discrete actions.

    Args:
        config: The configuration; checked here, before anything compiles.
        env: A registered id (built with ``num_envs // num_shards`` environments and the
            config's ``frame_stack`` and ``action_repeat``) or a ``VecEnv`` of one shard's
            environments: exactly ``num_envs // num_shards``, wrapped as it should be.
        **make_options: Passed to :func:`rollax.make` when ``env`` is an id.

    Raises:
        ValueError: an inconsistent configuration, continuous actions, a ``VecEnv`` of the
            wrong size, or a device count the layout cannot use.
    """
    config = config.validated()  # with num_shards for the devices, if left to them
    env = shard_env("make_pqn", config, env, host=True, **make_options)
    if not isinstance(env.action_space, Discrete):
        raise ValueError(
            f"make_pqn: PQN chooses among discrete actions; {env.env_id} has "
            f"{env.action_space!r}. Use PPO or SAC for continuous actions."
        )
    network, obs_spec = q_network(
        config,
        env.observation_space,
        int(env.action_space.n),
        dueling=False,
        mlp_layer_norm=config.layer_norm,
        encoder=config.image_encoder,
        who="make_pqn: PQN",
    )
    learner = pqn_learner(config, network, obs_spec)
    return build_onpolicy_agent("pqn", config, env, learner, agent_type=PQN)
