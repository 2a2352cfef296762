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
    ActionBox,
    action_box,
    critic_values,
    explore_in_box,
    image_shapes,
    red_noise,
    stretch_learner_schedule,
)
from rollax.agents._distributional import Support
from rollax.agents._offpolicy import (
    OffPolicyLearner,
    build_offpolicy_agent,
    feedforward_act,
    feedforward_explore,
)
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
    GradientStep,
    Optimizer,
    OptimizerHyperParams,
    gradient_step_for,
    optimizer_values,
    polyak,
    shard_env,
)
from rollax.types import PRNGKey

__all__ = [
    "TD3",
    "TD3HyperParams",
    "TD3Learner",
    "TD3Parts",
    "init_td3_learner",
    "make_td3",
    "moved_action",
    "noisy_action",
    "td3_act",
    "td3_hyperparams",
    "td3_learn",
]


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

    With ``exploration_correlation > 0``, each shard's ``OffPolicyState.exploration`` holds the
    unit normal noise of each environment's last action, float32 ``(num_envs // num_shards, A)``.
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
class TD3Parts:
    """What TD3's pieces take first: its networks, action box and optimizer, for one shard.

    :func:`td3_learn`, :func:`td3_act` and the rest are module-level functions of it, each
    callable on one seed's :class:`TD3Learner`.

    Attributes:
        config: The configuration.
        box: The action box.
        actor: The deterministic actor.
        critic: The twin critics (a distribution over ``num_atoms`` atoms, or one value).
        support: The atoms' support with ``num_atoms > 1``, else ``None``.
        optimizer: The static parts of the optimizer.
        step: The layer's gradient step.
        obs_spec: One observation's shapes and dtypes.
    """

    config: TD3Config
    box: ActionBox
    actor: DeterministicActor
    critic: DoubleQ
    support: Support | None
    optimizer: Optimizer
    step: GradientStep
    obs_spec: Any

    def values(self, q: jax.Array) -> jax.Array:
        """The critics' expected values ``(2, B)`` of their outputs."""
        return self.support.value(q) if self.support else q

    def policy(self, params: Any, obs: Any) -> jax.Array:
        """The actor's actions in the box: float32 ``(B, action_dim)``."""
        return self.box.scale(self.actor.apply(params, obs))


def td3_hyperparams(member: TD3Config) -> TD3HyperParams:
    """One seed's hyperparameters for a member's configuration (Python numbers)."""
    own = ("gamma", "tau", "exploration_noise", "policy_noise", "noise_clip")
    optimizer_data = optimizer_values(member, member.gradient_steps_in(member.total_steps))
    return TD3HyperParams(**optimizer_data, **{k: getattr(member, k) for k in own})


def init_td3_learner(parts: TD3Parts, key: PRNGKey, hparams: TD3HyperParams) -> TD3Learner:
    """One seed's fresh learner: the targets start as the networks."""
    k_actor, k_critic = jax.random.split(key)
    obs = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), parts.obs_spec)
    action = jnp.zeros((parts.box.dim,), jnp.float32)
    params = {
        "actor": parts.actor.init(k_actor, obs),
        "critic": parts.critic.init(k_critic, obs, action),
    }
    opt = {k: parts.optimizer.init(v) for k, v in params.items()}
    steps = jnp.zeros((), jnp.int32)
    return TD3Learner(params, params, opt["actor"], opt["critic"], hparams, steps)


def noisy_action(parts: TD3Parts, learner: TD3Learner, obs: Any, key: PRNGKey) -> jax.Array:
    """The actor's actions with Gaussian noise of ``exploration_noise`` half ranges."""
    action = parts.policy(learner.params["actor"], obs)
    noise = parts.box.noise(key, action.shape, learner.hparams.exploration_noise)
    return parts.box.clip(action + noise)


def moved_action(parts: TD3Parts, learner: TD3Learner, obs: Any, noise: jax.Array) -> jax.Array:
    """The actor's actions moved by standard normal ``noise`` (correlated exploration)."""
    action = parts.policy(learner.params["actor"], obs)
    return parts.box.clip(action + parts.box.spread(noise, learner.hparams.exploration_noise))


def td3_learn(
    parts: TD3Parts, learner: TD3Learner, batch: Transition, weight: jax.Array, key: PRNGKey
) -> tuple[TD3Learner, dict[str, jax.Array]]:
    """One gradient step of the critics, and every ``policy_delay`` of the actor and targets."""
    config, box, critic, step = parts.config, parts.box, parts.critic, parts.step
    hp, params, target = learner.hparams, learner.params, learner.target
    weights = parts.optimizer.transformation(hp, learner.steps)
    obs, action, ret, next_obs = nstep_window(batch, hp.gamma)

    # The critics, towards the smaller target value under the smoothed target policy.
    noise = jax.random.normal(key, action.shape, jnp.float32)
    next_action = smoothed_action(
        parts.policy(target["actor"], next_obs), noise, hp.policy_noise, hp.noise_clip,
        box.low, box.high,
    )  # fmt: skip
    next_q = critic.apply(target["critic"], next_obs, next_action)
    if parts.support:  # the projected distribution of the critic that expects less
        support = parts.support
        y, loss = support.double_q_target(next_q, ret.reward, ret.discount), support.loss
    else:
        y, loss = td3_target(ret.reward, ret.discount, next_q), twin_critic_loss

    def critic_loss(critic_params: Any) -> tuple[jax.Array, jax.Array]:
        q = critic.apply(critic_params, obs, action)
        return loss(q, y), parts.values(q)

    (q_loss, q), critic_grad = jax.value_and_grad(critic_loss, has_aux=True)(params["critic"])
    critic_params, critic_opt = step(weights, params["critic"], learner.critic_opt, critic_grad)

    # Every policy_delay steps: the actor against the updated critics, then the targets.
    def actor_loss(actor_params: Any) -> jax.Array:
        q = critic.apply(critic_params, obs, parts.policy(actor_params, obs))
        return td3_actor_loss(parts.values(q))

    pi_loss, actor_grad = jax.value_and_grad(actor_loss)(params["actor"])
    actor_params, actor_opt = step(weights, params["actor"], learner.actor_opt, actor_grad)
    delayed = (learner.steps + 1) % config.policy_delay == 0
    when_delayed = partial(jax.tree.map, partial(jnp.where, delayed))  # (new, old) trees
    actor_params, actor_opt = when_delayed(
        (actor_params, actor_opt), (params["actor"], learner.actor_opt)
    )
    online = {"actor": actor_params, "critic": critic_params}
    target = when_delayed(polyak(target, online, hp.tau), target)
    learner = TD3Learner(online, target, actor_opt, critic_opt, hp, learner.steps + 1)
    return learner, {"critic_loss": q_loss, "actor_loss": pi_loss, "q_value": q.mean()}


def td3_act(
    parts: TD3Parts, learner: TD3Learner, obs: Any, key: PRNGKey, deterministic: bool
) -> jax.Array:
    """The actor's action, or with its exploration noise: float32 ``(B, action_dim)``."""
    if deterministic:
        return parts.policy(learner.params["actor"], obs)
    return noisy_action(parts, learner, obs, key)


def make_td3(config: TD3Config, env: VecEnv | str, **make_options: Any) -> TD3:
    """TD3 for an environment of box actions (arguments and errors: ``make_sac``'s)."""
    config = config.validated()  # with num_shards for the devices, if left to them
    env = shard_env("make_td3", config, env, **make_options)
    box = action_box("make_td3: TD3", env, "DQN or PQN")
    red = red_noise(config, env, box)
    obs_spec = observation_spec(env.observation_space, "make_td3: TD3")
    shared = dict(
        hidden_sizes=tuple(config.hidden_sizes),
        activation=config.activation,
        image_shapes=image_shapes(obs_spec),
        layer_norm=config.encoder_layer_norm,
    )
    atoms = max(config.num_atoms, 1)  # a distribution over atoms (C51), or one value
    parts = TD3Parts(
        config=config,
        box=box,
        actor=DeterministicActor(action_dim=box.dim, **shared),
        critic=DoubleQ(mlp_layer_norm=config.critic_layer_norm, atoms=atoms, **shared),
        support=Support.of(config.v_min, config.v_max, atoms) if atoms > 1 else None,
        optimizer=Optimizer.of(config),
        step=gradient_step_for(config),
        obs_spec=obs_spec,
    )
    explore = explore_in_box(
        config, box, red, partial(moved_action, parts), partial(noisy_action, parts)
    )
    learner = OffPolicyLearner(
        obs_spec=obs_spec,
        hyperparams=td3_hyperparams,
        init=partial(init_td3_learner, parts),
        explore=feedforward_explore(explore),
        learn=partial(td3_learn, parts),
        metric_names=("critic_loss", "actor_loss", "q_value"),  # q_value: replayed actions
        act=feedforward_act(partial(td3_act, parts)),
        with_budget=stretch_learner_schedule(config),
        init_exploration=red.init if red else None,
    )
    agent = build_offpolicy_agent("td3", config, env, learner)
    q_values = critic_values(agent, parts.critic, config.normalize_obs, parts.values)
    return TD3(**vars(agent), q_values=q_values)
