"""SAC as pieces for the shared training layer: ``make_sac(config, env) -> Agent``.

The learner holds a squashed-Gaussian actor, twin critics with their targets, the entropy
temperature and three Adam states for one seed; the shared off-policy driver acts with it
into the replay buffer and calls ``learn`` for each gradient step. Each step updates the
temperature, the critics (soft targets from windows of ``n_step`` transitions: sums stop at
a termination, a truncation bootstraps from its true final observation), then the actor,
then the target critics (Polyak averaging), in Stable-Baselines3's order.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

from rollax._struct import pytree_dataclass
from rollax.agents._box import (
    BoxParts,
    action_box,
    box_learner,
    critic_values,
    network_settings,
    red_noise,
)
from rollax.agents._offpolicy import build_offpolicy_agent
from rollax.agents._replay import nstep_window
from rollax.agents.losses import twin_critic_loss
from rollax.agents.sac.config import SACConfig
from rollax.agents.sac.losses import sac_actor_loss, sac_alpha_loss, soft_target
from rollax.buffers import Transition
from rollax.envs import VecEnv
from rollax.networks import DoubleQ, SquashedGaussianActor, TanhGaussian
from rollax.spaces import observation_spec
from rollax.training import (
    Agent,
    Optimizer,
    OptimizerHyperParams,
    gradient_step_for,
    optimizer_values,
    polyak,
    shard_env,
)
from rollax.types import PRNGKey

__all__ = ["SAC", "SACHyperParams", "SACLearner", "SACParts", "make_sac"]

METRICS = ("critic_loss", "actor_loss", "alpha_loss", "alpha", "entropy", "q_value")
"""SAC's metrics: its three losses, the temperature, the policy's entropy estimate and the
mean Q-value of the replayed actions."""


@pytree_dataclass
class SACHyperParams(OptimizerHyperParams):
    """Hyperparameters as data (one value per seed): changing them does not recompile.

    The optimizer's (:class:`rollax.training.OptimizerHyperParams`, for the actor, the
    critics and the temperature), and:

    Attributes:
        gamma: Discount.
        tau: Weight of the online critics in each target update.
        target_entropy: The entropy the temperature steers the policy towards.
    """

    gamma: jax.Array
    tau: jax.Array
    target_entropy: jax.Array


@pytree_dataclass
class SACLearner:
    """One seed's SAC learner.

    Attributes:
        params: ``{"actor", "critic", "log_alpha"}``: the trained parameters.
        target_critic: The target critics' parameters.
        actor_opt: The optimizer's state for the actor.
        critic_opt: The optimizer's state for the critics.
        alpha_opt: The optimizer's state for ``log_alpha``.
        hparams: :class:`SACHyperParams`.
        steps: int32 ``()``: gradient steps taken (for the learning-rate schedule).

    With ``exploration_correlation > 0``, each shard's exploration state
    (``OffPolicyState.exploration``) is the standard normal noise of the last action of each of
    its environments: float32 ``(num_envs // num_shards, action_dim)``.
    """

    params: dict[str, Any]
    target_critic: Any
    actor_opt: Any
    critic_opt: Any
    alpha_opt: Any
    hparams: SACHyperParams
    steps: jax.Array


@dataclasses.dataclass(frozen=True, eq=False)
class SAC(Agent):
    """SAC as an :class:`~rollax.training.Agent`, plus its critics for inspection.

    Attributes:
        q_values: ``(state, obs, action) -> q``: every seed's twin critics, float32
            ``(num_seeds, 2, B)`` for observations ``(num_seeds, B, ...)`` (raw) and actions
            ``(num_seeds, B, action_dim)``.
    """

    q_values: Any = None


@dataclasses.dataclass(frozen=True, eq=False)
class SACParts(BoxParts):
    """SAC's pieces (:class:`~rollax.agents.BoxParts`): a squashed-Gaussian actor."""

    HyperParams = SACHyperParams

    def hyperparams(self, member: SACConfig) -> SACHyperParams:
        """One seed's hyperparameters for a member's configuration (Python numbers).

        The target entropy is ``-target_entropy_scale`` per action dimension of the box.
        """
        return SACHyperParams(
            **optimizer_values(member, member.gradient_steps_in(member.total_steps)),
            gamma=member.gamma,
            tau=member.tau,
            target_entropy=-member.target_entropy_scale * self.box.dim,
        )

    def policy(self, params: Any, obs: Any) -> TanhGaussian:
        """The actor's distribution in the box, over float32 ``(B, action_dim)`` actions."""
        mean, log_std = self.actor.apply(params, obs)
        return TanhGaussian(mean, log_std, self.box.low, self.box.high)

    def init(self, key: PRNGKey, hparams: SACHyperParams) -> SACLearner:
        """One seed's fresh learner: the target critics start as the critics.

        The temperature starts at ``init_alpha`` (``log_alpha``: float32 ``()``), the step
        count at 0.
        """
        k_actor, k_critic = jax.random.split(key)
        obs = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), self.obs_spec)
        params = {
            "actor": self.actor.init(k_actor, obs),
            "critic": self.critic.init(k_critic, obs, jnp.zeros((self.box.dim,), jnp.float32)),
            "log_alpha": jnp.log(jnp.asarray(self.config.init_alpha, jnp.float32)),
        }
        return SACLearner(
            params=params,
            target_critic=params["critic"],
            actor_opt=self.optimizer.init(params["actor"]),
            critic_opt=self.optimizer.init(params["critic"]),
            alpha_opt=self.optimizer.init(params["log_alpha"]),
            hparams=hparams,
            steps=jnp.zeros((), jnp.int32),
        )

    def sampled(self, learner: SACLearner, obs: Any, key: PRNGKey) -> jax.Array:
        """A sample of the policy: float32 ``(B, action_dim)`` in the box."""
        return self.policy(learner.params["actor"], obs).sample(key)

    def moved(self, learner: SACLearner, obs: Any, noise: jax.Array) -> jax.Array:
        """The policy's sample made from standard normal ``noise``: float32 ``(B, action_dim)``.

        For correlated exploration: each step's distribution is still the policy's.
        """
        return self.policy(learner.params["actor"], obs).from_noise(noise)[0]

    def act(self, learner: SACLearner, obs: Any, key: PRNGKey, deterministic: bool) -> jax.Array:
        """The squashed mean action, or a sample: float32 ``(B, action_dim)``."""
        dist = self.policy(learner.params["actor"], obs)
        return dist.mode() if deterministic else dist.sample(key)

    def learn(
        self, learner: SACLearner, batch: Transition, weight: jax.Array, key: PRNGKey
    ) -> tuple[SACLearner, dict[str, jax.Array]]:
        """One gradient step: the temperature, the critics, the actor, then the target critics.

        ``batch`` holds windows of transitions, leaves ``(B, n_step, ...)``; ``weight``
        (importance weights, ones: SAC's replay is uniform) is unused. The metrics are float32
        ``()``: the losses, ``alpha``, the entropy estimate and the replayed actions' mean Q-value.
        """
        critic, optimizer, step = self.critic, self.optimizer, self.step
        hp, params = learner.hparams, learner.params
        weights = optimizer.transformation(hp, learner.steps)
        k_next, k_actor = jax.random.split(key)
        obs, action, ret, next_obs = nstep_window(batch, hp.gamma)

        # One draw of the policy's noise serves the temperature's and the actor's losses.
        noise = jax.random.normal(k_actor, action.shape, jnp.float32)

        # The temperature, from the current policy's log-probabilities.
        _, log_prob = self.policy(params["actor"], obs).from_noise(noise)
        alpha_loss, alpha_grad = jax.value_and_grad(sac_alpha_loss)(
            params["log_alpha"], log_prob, hp.target_entropy
        )
        log_alpha, alpha_opt = params["log_alpha"], learner.alpha_opt
        if self.config.autotune_alpha:
            temperature = optimizer.transformation(hp, learner.steps, decay=False)
            log_alpha, alpha_opt = step(temperature, log_alpha, alpha_opt, alpha_grad)
        alpha = jnp.exp(log_alpha)

        # The critics, towards the soft target.
        next_dist = self.policy(params["actor"], next_obs)
        next_action, next_log_prob = next_dist.sample_and_log_prob(k_next)
        next_q = critic.apply(learner.target_critic, next_obs, next_action)
        target = soft_target(ret.reward, ret.discount, next_q, next_log_prob, alpha)

        def critic_loss(critic_params: Any) -> tuple[jax.Array, jax.Array]:
            q = critic.apply(critic_params, obs, action)
            return twin_critic_loss(q, target), q

        (q_loss, q), critic_grad = jax.value_and_grad(critic_loss, has_aux=True)(params["critic"])
        critic_params, critic_opt = step(weights, params["critic"], learner.critic_opt, critic_grad)

        # The actor, against the updated critics.
        def actor_loss(actor_params: Any) -> tuple[jax.Array, jax.Array]:
            sampled, log_prob = self.policy(actor_params, obs).from_noise(noise)
            q = critic.apply(critic_params, obs, sampled)
            return sac_actor_loss(q, log_prob, alpha), log_prob

        (pi_loss, log_prob), actor_grad = jax.value_and_grad(actor_loss, has_aux=True)(
            params["actor"]
        )
        actor_params, actor_opt = step(weights, params["actor"], learner.actor_opt, actor_grad)
        target_critic = polyak(learner.target_critic, critic_params, hp.tau)
        learner = learner.replace(
            params={"actor": actor_params, "critic": critic_params, "log_alpha": log_alpha},
            target_critic=target_critic,
            actor_opt=actor_opt,
            critic_opt=critic_opt,
            alpha_opt=alpha_opt,
            steps=learner.steps + 1,
        )
        metrics = {
            "critic_loss": q_loss,
            "actor_loss": pi_loss,
            "alpha_loss": alpha_loss,
            "alpha": alpha,
            "entropy": -log_prob.mean(),
            "q_value": q.mean(),
        }
        return learner, metrics


def make_sac(config: SACConfig, env: VecEnv | str, **make_options: Any) -> SAC:
    """Build SAC for an environment with box actions (any bounds).

    Args:
        config: The configuration; checked here, before anything compiles.
        env: A registered id (built with ``num_envs // num_shards`` environments) or a
            ``VecEnv`` of one shard's environments, exactly that many.
        **make_options: Passed to :func:`rollax.make` when ``env`` is an id.

    Raises:
        ValueError: an inconsistent configuration, a ``VecEnv`` of the wrong size, or an
            environment whose actions are not a bounded 1-D box.
    """
    config = config.validated()  # with num_shards for the devices, if left to them
    env = shard_env("make_sac", config, env, host=True, **make_options)
    box = action_box("make_sac: SAC", env, "DQN (rollax.agents.dqn)")
    red = red_noise(config, env, box)
    obs_spec = observation_spec(env.observation_space, "make_sac: SAC")
    shared = network_settings(config, obs_spec)
    parts = SACParts(
        config, box, SquashedGaussianActor(action_dim=box.dim, **shared),
        DoubleQ(mlp_layer_norm=config.critic_layer_norm, **shared),
        Optimizer.of(config), gradient_step_for(config), obs_spec,
    )  # fmt: skip
    # Policy samples (uniform before learning_starts), correlated by exploration_correlation.
    learner = box_learner(config, box, red, parts, METRICS)
    agent = build_offpolicy_agent("sac", config, env, learner)
    return SAC(**vars(agent), q_values=critic_values(agent, parts.critic, config.normalize_obs))
