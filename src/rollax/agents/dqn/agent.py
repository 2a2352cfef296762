"""DQN as pieces for the shared training layer: ``make_dqn(config, env) -> Agent``.

The learner holds a Q-network, its target network, Adam's state and the hyperparameters of
one seed; the shared off-policy driver (:mod:`rollax.agents._offpolicy`) acts with it into
the replay buffer and calls :func:`make_dqn`'s ``learn`` for each gradient step. Targets
come from windows of ``n_step`` transitions (:func:`rollax.ops.nstep_return`): sums stop at
a termination, and a truncation bootstraps from its true final observation.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import optax

from rollax._struct import pytree_dataclass
from rollax.agents._offpolicy import (
    OffPolicyState,
    checkpoint_hooks,
    init_offpolicy_state,
    make_offpolicy_iteration,
    observe_seeds,
    replay_buffer,
)
from rollax.agents.dqn.config import DQNConfig
from rollax.agents.dqn.losses import next_state_value, q_learning_loss
from rollax.buffers import Transition
from rollax.envs import EnvParams, VecEnv
from rollax.networks import QNetwork
from rollax.ops import nstep_return
from rollax.spaces import Discrete, is_image_key, observation_spec
from rollax.training import Agent, build_agent, feedforward_policy, training_env
from rollax.types import PRNGKey

__all__ = ["DQN", "DQNHyperParams", "DQNLearner", "make_dqn"]

METRICS = ("td_loss", "q_value")
"""DQN's metrics: the mean TD loss and the mean Q-value of the taken actions."""


@pytree_dataclass
class DQNHyperParams:
    """Hyperparameters as data (one value per seed): changing them does not recompile.

    Attributes:
        learning_rate: Adam's learning rate.
        gamma: Discount.
        tau: Weight of the online network in each target update.
        exploration_start: Epsilon at the start.
        exploration_end: Epsilon after the schedule.
        exploration_steps: Environment steps per seed over which epsilon decays.
        importance_exponent: Prioritized replay's beta.
    """

    learning_rate: jax.Array
    gamma: jax.Array
    tau: jax.Array
    exploration_start: jax.Array
    exploration_end: jax.Array
    exploration_steps: jax.Array
    importance_exponent: jax.Array


@pytree_dataclass
class DQNLearner:
    """One seed's DQN learner.

    Attributes:
        params: The online Q-network's parameters.
        target_params: The target network's parameters.
        opt_state: Adam's state.
        hparams: :class:`DQNHyperParams`.
        steps: int32 ``()``: gradient steps taken (for periodic target updates).
    """

    params: Any
    target_params: Any
    opt_state: Any
    hparams: DQNHyperParams
    steps: jax.Array


@dataclasses.dataclass(frozen=True, eq=False)
class DQN(Agent):
    """DQN as an :class:`~rollax.training.Agent`, plus its Q-values for inspection.

    Attributes:
        q_values: ``(state, obs) -> q``: every seed's online Q-values, float32
            ``(num_seeds, B, num_actions)`` for observations ``(num_seeds, B, ...)`` (raw:
            normalized inside when ``normalize_obs``).
    """

    q_values: Any = None


def epsilon(hp: DQNHyperParams, env_steps: jax.Array) -> jax.Array:
    """The exploration rate after ``env_steps`` steps per seed: linear, then constant."""
    frac = jnp.clip(
        env_steps.astype(jnp.float32) / jnp.maximum(hp.exploration_steps, 1.0), 0.0, 1.0
    )
    return hp.exploration_start + frac * (hp.exploration_end - hp.exploration_start)


def make_dqn(config: DQNConfig, env: VecEnv | str, **make_options: Any) -> DQN:
    """Build DQN for an environment with discrete actions.

    Args:
        config: The configuration; checked here, before anything compiles.
        env: A registered id (built with ``num_envs = num_seeds * num_envs``) or a
            ``VecEnv`` with exactly that many environments.
        **make_options: Passed to :func:`rollax.make` when ``env`` is an id.

    Raises:
        ValueError: an inconsistent configuration, a ``VecEnv`` of the wrong size, or an
            environment whose actions are not discrete.
    """
    config.validate()
    env = training_env("make_dqn", env, config.num_seeds * config.num_envs, **make_options)
    if not isinstance(env.action_space, Discrete):
        raise ValueError(
            f"make_dqn: DQN chooses among discrete actions; {env.env_id} has "
            f"{env.action_space!r}. Use SAC (rollax.agents.sac) for continuous actions."
        )
    obs_spec = observation_spec(env.observation_space, "make_dqn: DQN")
    num_actions = int(env.action_space.n)
    network = QNetwork(
        num_actions=num_actions,
        hidden_sizes=tuple(config.hidden_sizes),
        activation=config.activation,
        dueling=config.dueling,
        image_shapes={k: s.shape for k, s in obs_spec.items() if is_image_key(k)}
        if isinstance(obs_spec, dict)
        else None,
        layer_norm=config.encoder_layer_norm,
    )
    buffer = replay_buffer(config)
    optimizer = optax.inject_hyperparams(optax.adam)(learning_rate=config.learning_rate)

    def init_learner(key: PRNGKey) -> DQNLearner:
        example = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), obs_spec)
        params = network.init(key, example)

        def scalar(value: float) -> jax.Array:
            return jnp.asarray(value, jnp.float32)

        return DQNLearner(
            params=params,
            target_params=params,
            opt_state=optimizer.init(params),
            hparams=DQNHyperParams(
                learning_rate=scalar(config.learning_rate),
                gamma=scalar(config.gamma),
                tau=scalar(config.tau),
                exploration_start=scalar(config.exploration_start),
                exploration_end=scalar(config.exploration_end),
                exploration_steps=scalar(config.exploration_fraction * config.total_steps),
                importance_exponent=scalar(config.importance_exponent),
            ),
            steps=jnp.zeros((), jnp.int32),
        )

    def init(key: PRNGKey, env_params: EnvParams | None = None) -> OffPolicyState:
        return init_offpolicy_state(
            key=key,
            env=env,
            env_params=env_params,
            buffer=buffer,
            obs_spec=obs_spec,
            num_seeds=config.num_seeds,
            init_learner=init_learner,
        )

    def epsilon_greedy(params: Any, obs: Any, key: PRNGKey, eps: jax.Array) -> jax.Array:
        """int32 ``(B,)`` actions: greedy, or uniform with probability ``eps``."""
        greedy = jnp.argmax(network.apply(params, obs), axis=-1).astype(jnp.int32)
        k_explore, k_action = jax.random.split(key)
        batch = greedy.shape
        explore = jax.random.uniform(k_explore, batch) < eps
        random = jax.random.randint(k_action, batch, 0, num_actions, jnp.int32)
        return jnp.where(explore, random, greedy)

    def act(learner: DQNLearner, obs: Any, key: PRNGKey, env_steps: jax.Array) -> tuple:
        action = epsilon_greedy(learner.params, obs, key, epsilon(learner.hparams, env_steps))
        return action, learner

    def learn(
        learner: DQNLearner, batch: Transition, weight: jax.Array, key: PRNGKey
    ) -> tuple[DQNLearner, dict[str, jax.Array], jax.Array]:
        hp = learner.hparams
        ret = nstep_return(batch.reward, batch.terminated, batch.truncated, hp.gamma)
        rows = jnp.arange(ret.index.shape[0])
        next_obs = jax.tree.map(lambda x: x[rows, ret.index], batch.next_obs)
        bootstrap = next_state_value(
            network.apply(learner.params, next_obs),
            network.apply(learner.target_params, next_obs),
            config.double_q,
        )
        target = ret.reward + ret.discount * bootstrap
        obs = jax.tree.map(lambda x: x[:, 0], batch.obs)

        def loss_fn(params: Any) -> tuple[jax.Array, jax.Array]:
            q = network.apply(params, obs)
            return q_learning_loss(q, batch.action[:, 0], target, weight, config.loss)

        (loss, td_error), grads = jax.value_and_grad(loss_fn, has_aux=True)(learner.params)
        if config.clip_grad_value:
            c = config.clip_grad_value
            grads = jax.tree.map(lambda g: jnp.clip(g, -c, c), grads)
        if config.max_grad_norm:
            norm = optax.tree.norm(grads)
            scale = jnp.minimum(1.0, config.max_grad_norm / (norm + 1e-6))
            grads = jax.tree.map(lambda g: g * scale, grads)
        opt_state = learner.opt_state._replace(
            hyperparams={**learner.opt_state.hyperparams, "learning_rate": hp.learning_rate}
        )
        # optax mixes int32 step counts with float32 (not strict-promotion clean).
        with jax.numpy_dtype_promotion("standard"):
            updates, opt_state = optimizer.update(grads, opt_state, learner.params)
        params = optax.apply_updates(learner.params, updates)
        steps = learner.steps + 1
        due = steps % config.target_update_every == 0
        target_params = jax.tree.map(
            lambda t, p: jnp.where(due, hp.tau * p + (1.0 - hp.tau) * t, t),
            learner.target_params,
            params,
        )
        learner = learner.replace(
            params=params, target_params=target_params, opt_state=opt_state, steps=steps
        )
        q_taken = target - td_error
        metrics = {"td_loss": loss, "q_value": q_taken.mean()}
        return learner, metrics, jnp.abs(td_error)

    iteration = make_offpolicy_iteration(
        config,
        env,
        buffer,
        act,
        learn,
        METRICS,
        (lambda learner: learner.hparams.importance_exponent) if config.prioritized else None,
    )

    def policy_act(
        state: OffPolicyState, obs: Any, key: PRNGKey, deterministic: bool = True
    ) -> jax.Array:
        """Every seed's greedy actions, or epsilon-greedy ones at the final epsilon.

        ``obs (num_seeds, B, ...) -> actions int32 (num_seeds, B)``.
        """

        def one_seed(learner: DQNLearner, obs: Any, key: PRNGKey) -> jax.Array:
            eps = jnp.where(deterministic, 0.0, learner.hparams.exploration_end)
            return epsilon_greedy(learner.params, obs, key, eps)

        keys = jax.random.split(key, config.num_seeds)
        obs = observe_seeds(state, obs, config.normalize_obs)
        return jax.vmap(one_seed)(state.learner, obs, keys)

    def with_budget(state: OffPolicyState, total_steps: int) -> OffPolicyState:
        """Stretch the exploration schedule to a new budget."""
        hp = state.learner.hparams
        steps = jnp.full_like(hp.exploration_steps, config.exploration_fraction * total_steps)
        return state.replace(
            learner=state.learner.replace(hparams=hp.replace(exploration_steps=steps))
        )

    def q_values(state: OffPolicyState, obs: Any) -> jax.Array:
        obs = observe_seeds(state, obs, config.normalize_obs)
        return jax.vmap(lambda learner, obs: network.apply(learner.params, obs))(state.learner, obs)

    to_checkpoint, from_checkpoint = checkpoint_hooks(config, buffer, obs_spec, env)
    agent = build_agent(
        name="dqn",
        config=config,
        env=env,
        init=init,
        iteration=iteration,
        steps_per_iteration=config.steps_per_iteration,
        unit_name="vectorized steps of num_envs * train_every",
        metric_names=METRICS,
        policy=feedforward_policy(policy_act),
        with_budget=with_budget,
        to_checkpoint=to_checkpoint,
        from_checkpoint=from_checkpoint,
        run_cpu_level=1,
    )
    return DQN(**vars(agent), q_values=jax.jit(q_values))
