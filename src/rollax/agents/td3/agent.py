"""TD3 as an off-policy learner: ``make_td3(config, env) -> TD3``.

Each gradient step moves the twin critics towards the smaller target critic's value of the
successor under the smoothed target policy (n-step windows); every ``policy_delay`` steps
the actor follows the first critic and the targets move by ``tau``.
"""

from __future__ import annotations

import dataclasses
from functools import partial
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
from rollax.agents._distributional import Support
from rollax.agents._offpolicy import build_offpolicy_agent
from rollax.agents._replay import nstep_window
from rollax.agents.losses import twin_critic_loss
from rollax.agents.td3.config import TD3Config
from rollax.agents.td3.losses import smoothed_action, td3_actor_loss, td3_target
from rollax.buffers import Transition
from rollax.envs import VecEnv
from rollax.networks import DeterministicActor, DoubleQ
from rollax.spaces import observation_spec
from rollax.training import (
    Agent,
    Optimizer,
    OptimizerHyperParams,
    gradient_step_for,
    polyak,
    shard_env,
)
from rollax.types import PRNGKey

__all__ = ["TD3", "TD3HyperParams", "TD3Learner", "TD3Parts", "make_td3"]


@pytree_dataclass
class TD3HyperParams(OptimizerHyperParams):
    """Per-seed data: the optimizer's and ``TD3Config``'s fields of these names."""

    gamma: jax.Array
    tau: jax.Array
    exploration_noise: jax.Array
    policy_noise: jax.Array
    noise_clip: jax.Array


@pytree_dataclass
class TD3Learner:
    """One seed's TD3 learner.

    Attributes:
        params: ``{"actor", "critic"}``: the trained parameters.
        target: ``{"actor", "critic"}``: their targets.
        actor_opt: The optimizer's state for the actor.
        critic_opt: The optimizer's state for the critics.
        hparams: :class:`TD3HyperParams`.
        steps: int32 ``()``: critic steps taken (the actor steps every ``policy_delay``).
    """

    params: dict[str, Any]
    target: dict[str, Any]
    actor_opt: Any
    critic_opt: Any
    hparams: TD3HyperParams
    steps: jax.Array


@dataclasses.dataclass(frozen=True, eq=False)
class TD3(Agent):
    """TD3 as an Agent, with SAC's ``q_values(state, obs, action)``: ``(num_seeds, 2, B)``."""

    q_values: Any = None


@dataclasses.dataclass(frozen=True, eq=False)
class TD3Parts(BoxParts):
    """TD3's pieces (:class:`~rollax.agents.BoxParts`), with the critics' atoms (``support``).

    ``support`` is ``None`` for critics of one value each.
    """

    HyperParams = TD3HyperParams
    support: Support | None = None

    def values(self, q: jax.Array) -> jax.Array:
        """The critics' expected values ``(2, B)`` of their outputs."""
        return self.support.value(q) if self.support else q

    def policy(self, params: Any, obs: Any) -> jax.Array:
        """The actor's actions in the box: float32 ``(B, action_dim)``."""
        return self.box.scale(self.actor.apply(params, obs))

    def init(self, key: PRNGKey, hparams: TD3HyperParams) -> TD3Learner:
        """One seed's fresh learner: the targets start as the networks."""
        k_actor, k_critic = jax.random.split(key)
        obs = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), self.obs_spec)
        action = jnp.zeros((self.box.dim,), jnp.float32)
        params = {"actor": self.actor.init(k_actor, obs)}
        params["critic"] = self.critic.init(k_critic, obs, action)
        opt = {k: self.optimizer.init(v) for k, v in params.items()}
        steps = jnp.zeros((), jnp.int32)
        return TD3Learner(params, params, opt["actor"], opt["critic"], hparams, steps)

    def sampled(self, learner: TD3Learner, obs: Any, key: PRNGKey) -> jax.Array:
        """The actor's actions with Gaussian noise of ``exploration_noise`` half ranges."""
        action = self.policy(learner.params["actor"], obs)
        noise = self.box.noise(key, action.shape, learner.hparams.exploration_noise)
        return self.box.clip(action + noise)

    def moved(self, learner: TD3Learner, obs: Any, noise: jax.Array) -> jax.Array:
        """The actor's actions moved by standard normal ``noise`` (correlated exploration)."""
        action = self.policy(learner.params["actor"], obs)
        return self.box.clip(action + self.box.spread(noise, learner.hparams.exploration_noise))

    def act(self, learner: TD3Learner, obs: Any, key: PRNGKey, deterministic: bool) -> jax.Array:
        """The actor's action, or with its exploration noise: float32 ``(B, action_dim)``."""
        if deterministic:
            return self.policy(learner.params["actor"], obs)
        return self.sampled(learner, obs, key)

    def learn(
        self, learner: TD3Learner, batch: Transition, weight: jax.Array, key: PRNGKey
    ) -> tuple[TD3Learner, dict[str, jax.Array]]:
        """A gradient step of the critics, and every ``policy_delay`` of the actor and targets."""
        box, critic, step = self.box, self.critic, self.step
        hp, params, target = learner.hparams, learner.params, learner.target
        weights = self.optimizer.transformation(hp, learner.steps)
        obs, action, ret, next_obs = nstep_window(batch, hp.gamma)

        # The critics, towards the smaller target value under the smoothed target policy.
        noise = jax.random.normal(key, action.shape, jnp.float32)
        next_action = smoothed_action(
            self.policy(target["actor"], next_obs), noise, hp.policy_noise, hp.noise_clip,
            box.low, box.high,
        )  # fmt: skip
        next_q = critic.apply(target["critic"], next_obs, next_action)
        if support := self.support:  # the projected distribution of the critic expecting less
            y, loss = support.double_q_target(next_q, ret.reward, ret.discount), support.loss
        else:
            y, loss = td3_target(ret.reward, ret.discount, next_q), twin_critic_loss

        def critic_loss(critic_params: Any) -> tuple[jax.Array, jax.Array]:
            q = critic.apply(critic_params, obs, action)
            return loss(q, y), self.values(q)

        (q_loss, q), critic_grad = jax.value_and_grad(critic_loss, has_aux=True)(params["critic"])
        critic_params, critic_opt = step(weights, params["critic"], learner.critic_opt, critic_grad)

        # Every policy_delay steps: the actor against the updated critics, then the targets.
        def actor_loss(actor_params: Any) -> jax.Array:
            q = critic.apply(critic_params, obs, self.policy(actor_params, obs))
            return td3_actor_loss(self.values(q))

        pi_loss, actor_grad = jax.value_and_grad(actor_loss)(params["actor"])
        actor_params, actor_opt = step(weights, params["actor"], learner.actor_opt, actor_grad)
        delayed = (learner.steps + 1) % self.config.policy_delay == 0
        when_delayed = partial(jax.tree.map, partial(jnp.where, delayed))  # (new, old) trees
        actor_params, actor_opt = when_delayed(
            (actor_params, actor_opt), (params["actor"], learner.actor_opt)
        )
        online = {"actor": actor_params, "critic": critic_params}
        target = when_delayed(polyak(target, online, hp.tau), target)
        learner = TD3Learner(online, target, actor_opt, critic_opt, hp, learner.steps + 1)
        return learner, {"critic_loss": q_loss, "actor_loss": pi_loss, "q_value": q.mean()}


def make_td3(config: TD3Config, env: VecEnv | str, **make_options: Any) -> TD3:
    """TD3 for an environment of box actions (arguments and errors: ``make_sac``'s)."""
    config = config.validated()  # with num_shards for the devices, if left to them
    env = shard_env("make_td3", config, env, host=True, **make_options)
    box = action_box("make_td3: TD3", env, "DQN or PQN")
    red = red_noise(config, env, box)
    obs_spec = observation_spec(env.observation_space, "make_td3: TD3")
    shared = network_settings(config, obs_spec)
    atoms = max(config.num_atoms, 1)  # a distribution over atoms (C51), or one value
    parts = TD3Parts(
        config, box, DeterministicActor(action_dim=box.dim, **shared),
        DoubleQ(mlp_layer_norm=config.critic_layer_norm, atoms=atoms, **shared),
        Optimizer.of(config), gradient_step_for(config), obs_spec,
        Support.of(config.v_min, config.v_max, atoms) if atoms > 1 else None,
    )  # fmt: skip
    learner = box_learner(config, box, red, parts, ("critic_loss", "actor_loss", "q_value"))
    agent = build_offpolicy_agent("td3", config, env, learner)
    q_values = critic_values(agent, parts.critic, config.normalize_obs, parts.values)
    return TD3(**vars(agent), q_values=q_values)
