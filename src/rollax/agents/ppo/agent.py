"""PPO as an on-policy learner: ``make_ppo(config, env) -> PPO``.

``agent = make_ppo(config, "CartPole-v1")``, then ``state = agent.init(key)`` builds the
whole training state and ``state, metrics = agent.run(state, num_steps)`` trains for exactly
``num_steps`` environment steps per seed, any number of times, without compiling again. One
iteration is a rollout of ``num_steps`` steps in ``num_envs`` environments per seed and an
update over it: the on-policy driver's (:mod:`rollax.agents`), which PPO gives its sampled
actions, its critic's values, GAE's targets and its clipped loss.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax

from rollax._struct import pytree_dataclass
from rollax.agents._onpolicy import (
    LAYOUT,
    OnPolicyAgent,
    OnPolicyLearner,
    OnPolicyState,
    Rollout,
    build_onpolicy_agent,
)
from rollax.agents.ppo.config import PPOConfig
from rollax.agents.ppo.losses import ppo_loss
from rollax.agents.ppo.network import network_for
from rollax.envs import VecEnv
from rollax.networks import Network
from rollax.ops import gae
from rollax.training import Optimizer, OptimizerHyperParams, optimizer_values, shard_env
from rollax.types import PRNGKey

__all__ = ["LAYOUT", "PPO", "PPOHyperParams", "PPOState", "Rollout", "make_ppo"]

PPOState = OnPolicyState
"""PPO's training state: the on-policy driver's :class:`~rollax.agents.OnPolicyState`
(``hparams`` a :class:`PPOHyperParams`)."""


@pytree_dataclass
class PPOHyperParams(OptimizerHyperParams):
    """Hyperparameters as data (one value per seed): changing them does not recompile.

    The optimizer's (:class:`rollax.training.OptimizerHyperParams`: learning rate, its
    schedule over the budget's updates, norm bound, ...), and:

    Attributes:
        gamma: Discount.
        gae_lambda: GAE's lambda.
        clip_eps: Ratio (and value) clipping range.
        ent_coef: Entropy bonus weight.
        vf_coef: Value loss weight.
        reward_scale: Factor applied to rewards before advantages and value targets.
    """

    gamma: jax.Array
    gae_lambda: jax.Array
    clip_eps: jax.Array
    ent_coef: jax.Array
    vf_coef: jax.Array
    reward_scale: jax.Array


def hyperparams(config: PPOConfig) -> PPOHyperParams:
    """One seed's :class:`PPOHyperParams` for ``config``, as Python numbers.

    The learning-rate schedule spans the budget's updates. The training layer holds them as
    float32, one value per member.
    """
    return PPOHyperParams(
        **optimizer_values(config, config.updates_in_budget),
        gamma=config.gamma,
        gae_lambda=config.gae_lambda,
        clip_eps=config.clip_eps,
        ent_coef=config.ent_coef,
        vf_coef=config.vf_coef,
        reward_scale=config.reward_scale,
    )


@dataclasses.dataclass(frozen=True, eq=False)
class PPO(OnPolicyAgent):
    """PPO as an :class:`~rollax.training.Agent`, plus its rollout and network for inspection.

    Attributes:
        collect: ``state -> (state, rollout)``: one rollout without an update, a
            :class:`Rollout` with leaves ``(num_steps, num_seeds * num_envs, ...)`` (seed by
            seed, each seed's shards in order); ``rollout.extras["log_prob"]`` holds the
            sampled actions' log-probabilities.
        network: The :class:`~rollax.networks.Network` every part of PPO calls.
    """


def ppo_learner(config: PPOConfig, network: Network, obs_spec: Any) -> OnPolicyLearner:
    """PPO's part of the on-policy driver: sampled actions, GAE, the clipped loss."""

    def explore(state: OnPolicyState, outputs: tuple, key: PRNGKey) -> tuple:
        action, log_prob = outputs[0].sample_and_log_prob(seed=key)
        return action, {"log_prob": log_prob}

    def act(state: OnPolicyState, outputs: tuple, key: PRNGKey, deterministic: bool) -> jax.Array:
        return outputs[0].mode() if deterministic else outputs[0].sample(seed=key)

    def targets(hp: PPOHyperParams, data: Rollout) -> tuple:
        advantage, target = gae(
            data.reward * hp.reward_scale,
            data.value,
            data.next_value,
            data.terminated,
            data.truncated,
            hp.gamma,
            hp.gae_lambda,
        )
        return data.action, data.extras["log_prob"], data.value, advantage, target

    def loss(hp: PPOHyperParams, outputs: tuple, steps: tuple) -> tuple:
        dist, value = outputs
        action, old_log_prob, old_value, advantage, target = steps
        return ppo_loss(
            dist.log_prob(action),
            old_log_prob,
            advantage,
            value,
            old_value,
            target,
            dist.entropy(),
            clip_eps=hp.clip_eps,
            vf_coef=hp.vf_coef,
            ent_coef=hp.ent_coef,
            clip_value=config.clip_value,
            normalize_advantages=config.normalize_advantages,
        )

    return OnPolicyLearner(
        network=network,
        obs_spec=obs_spec,
        optimizer=Optimizer.of(config, eps=1e-5),
        hyperparams=hyperparams,
        explore=explore,
        act=act,
        value=lambda outputs: outputs[1],
        targets=targets,
        loss=loss,
        metric_names=("policy_loss", "value_loss", "entropy", "approx_kl"),
    )


def make_ppo(
    config: PPOConfig,
    env: VecEnv | str,
    *,
    network: Network | None = None,
    **make_options: Any,
) -> PPO:
    """Build PPO for an environment.

    Args:
        config: The configuration; checked here, before anything compiles.
        env: A registered id (built with ``num_envs // num_shards`` environments and the
            config's ``frame_stack`` and ``action_repeat``) or a ``VecEnv`` of one shard's
            environments: exactly ``num_envs // num_shards``, wrapped as it should be.
        network: A :class:`~rollax.networks.Network` of your own, with outputs
            ``(distribution, value)``, instead of the one the configuration describes. A
            network whose carry has leaves is recurrent: the loss replays sequences
            (``chunk_length``, ``burn_in``).
        **make_options: Passed to :func:`rollax.make` when ``env`` is an id.

    Raises:
        ValueError: an inconsistent configuration, a ``VecEnv`` of the wrong size, or a
            device count the layout cannot use.
    """
    config = config.validated()  # with num_shards for the devices, if left to them
    env = shard_env("make_ppo", config, env, host=True, **make_options)
    built, obs_spec = network_for(config, env)
    learner = ppo_learner(config, network or built, obs_spec)
    return build_onpolicy_agent("ppo", config, env, learner, agent_type=PPO)
