"""DQN as pieces for the shared training layer: ``make_dqn(config, env) -> Agent``.

The learner holds a Q-network, its target network, the optimizer's state and the
hyperparameters of one seed; the shared off-policy driver (:mod:`rollax.agents._offpolicy`)
acts with it into the replay buffer and calls :func:`make_dqn`'s ``learn`` for each gradient
step. Targets come from windows of ``n_step`` transitions (:func:`rollax.ops.nstep_return`):
sums stop at a termination, and a truncation bootstraps from its true final observation.

A recurrent Q-network (``recurrent="gru"`` or ``"lstm"``) learns as R2D2 does: each sampled
sequence is replayed from the carry stored with its first step, with the carry reset
wherever ``first`` marks an episode's first observation; ``burn_in`` steps refresh that
carry without gradient; the loss covers the remaining ``sequence_length`` steps, with
n-step (:func:`rollax.ops.nstep_targets`) or Peng's Q(λ) targets
(:func:`rollax.ops.lambda_returns`) built inside the sequence. A step that ended an episode
bootstraps from its final observation under the carry of the episode that ended.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from rollax._struct import pytree_dataclass
from rollax.agents._exploration import epsilon_greedy as epsilon_greedy_action
from rollax.agents._exploration import linear_epsilon
from rollax.agents._offpolicy import (
    LAYOUT,
    OffPolicyLearner,
    OffPolicyState,
    build_offpolicy_agent,
    observe_for_policy,
)
from rollax.agents.dqn.config import DQNConfig
from rollax.agents.dqn.sequences import (
    SequenceReplay,
    replay_sequences,
    sequence_loss,
    sequence_targets,
)
from rollax.agents.losses import next_state_value, q_learning_loss
from rollax.buffers import Transition
from rollax.envs import VecEnv
from rollax.networks import Network, q_network
from rollax.ops import nstep_return
from rollax.spaces import Discrete
from rollax.training import (
    SEED,
    Agent,
    Optimizer,
    OptimizerHyperParams,
    gradient_step_for,
    optimizer_values,
    polyak,
    shard_env,
    stretch_schedule,
)
from rollax.types import PRNGKey

__all__ = ["DQN", "DQNHyperParams", "DQNLearner", "make_dqn"]

METRICS = ("td_loss", "q_value")
"""DQN's metrics: the mean TD loss and the mean Q-value of the taken actions."""


@pytree_dataclass
class DQNHyperParams(OptimizerHyperParams):
    """Hyperparameters as data (one value per seed): changing them does not recompile.

    The optimizer's (:class:`rollax.training.OptimizerHyperParams`), and:

    Attributes:
        gamma: Discount.
        tau: Weight of the online network in each target update.
        exploration_start: Epsilon at the start.
        exploration_end: Epsilon after the schedule.
        exploration_steps: Environment steps per seed over which epsilon decays.
        importance_exponent: Prioritized replay's beta.
    """

    gamma: jax.Array
    tau: jax.Array
    exploration_start: jax.Array
    exploration_end: jax.Array
    exploration_steps: jax.Array
    importance_exponent: jax.Array


def hyperparams(config: DQNConfig) -> DQNHyperParams:
    """One seed's :class:`DQNHyperParams` for ``config``, as Python numbers.

    The learning-rate schedule spans the budget's gradient steps. The training layer holds
    them as float32, one value per member.
    """
    return DQNHyperParams(
        **optimizer_values(config, config.gradient_steps_in(config.total_steps)),
        gamma=config.gamma,
        tau=config.tau,
        exploration_start=config.exploration_start,
        exploration_end=config.exploration_end,
        exploration_steps=config.exploration_fraction * config.total_steps,
        importance_exponent=config.importance_exponent,
    )


@pytree_dataclass
class DQNLearner:
    """One seed's DQN learner.

    Attributes:
        params: The online Q-network's parameters.
        target_params: The target network's parameters.
        opt_state: The optimizer's state (Adam's: ``optax.ScaleByAdamState``).
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
            normalized inside when ``normalize_obs``). A recurrent network sees each
            observation as the first of an episode (a fresh carry); step ``network``
            with a carry for the values inside an episode.
        network: The Q-network (a :class:`~rollax.networks.Network`), for one
            seed's parameters (``state.learner.params`` of one seed).
        targets: ``(learner, batch) -> targets``: the TD targets the learner trains on, for
            one seed's learner and a batch as replay samples it (observations as the
            learner sees them): float32 ``(B,)`` for windows ``(B, n_step, ...)``, or
            ``(B, sequence_length)`` for a recurrent learner's sequences ``(B, burn_in +
            sequence_length, ...)``.
    """

    q_values: Any = None
    network: Network | None = None
    targets: Any = None


def epsilon(hp: DQNHyperParams, env_steps: jax.Array) -> jax.Array:
    """The exploration rate after ``env_steps`` steps per seed: linear, then constant."""
    progress = env_steps.astype(jnp.float32) / jnp.maximum(hp.exploration_steps, 1.0)
    return linear_epsilon(hp.exploration_start, hp.exploration_end, progress)


def make_dqn(config: DQNConfig, env: VecEnv | str, **make_options: Any) -> DQN:
    """Build DQN for an environment with discrete actions.

    Args:
        config: The configuration; checked here, before anything compiles.
        env: A registered id (built with ``num_envs // num_shards`` environments) or a
            ``VecEnv`` of one shard's environments, exactly that many.
        **make_options: Passed to :func:`rollax.make` when ``env`` is an id.

    Raises:
        ValueError: an inconsistent configuration, a ``VecEnv`` of the wrong size, an
            environment whose actions are not discrete, or a device count the layout
            cannot use.
    """
    config = config.validated()  # with num_shards for the devices, if left to them
    env = shard_env("make_dqn", config, env, **make_options)
    if not isinstance(env.action_space, Discrete):
        raise ValueError(
            f"make_dqn: DQN chooses among discrete actions; {env.env_id} has "
            f"{env.action_space!r}. Use SAC (rollax.agents.sac) for continuous actions."
        )
    num_actions = int(env.action_space.n)
    network, obs_spec = q_network(
        config, env.observation_space, num_actions, dueling=config.dueling
    )
    step = gradient_step_for(config)
    optimizer = Optimizer.of(config, clip_value=config.clip_grad_value)

    def init_learner(key: PRNGKey, hparams: DQNHyperParams) -> DQNLearner:
        example = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), obs_spec)
        params = network.init(key, example)
        return DQNLearner(
            params=params,
            target_params=params,
            opt_state=optimizer.init(params),
            hparams=hparams,
            steps=jnp.zeros((), jnp.int32),
        )

    def epsilon_greedy(
        params: Any, obs: Any, carry: Any, first: jax.Array, key: PRNGKey, eps: jax.Array
    ) -> tuple[jax.Array, Any]:
        """int32 ``(B,)`` actions, greedy or uniform with probability ``eps``; the carry."""
        carry, q = network.apply(params, obs, carry, first)
        return epsilon_greedy_action(q, key, eps), carry

    def explore(
        learner: DQNLearner,
        exploration: None,
        obs: Any,
        carry: Any,
        first: jax.Array,
        key: PRNGKey,
        env_steps: jax.Array,
    ) -> tuple:
        eps = epsilon(learner.hparams, env_steps)
        action, carry = epsilon_greedy(learner.params, obs, carry, first, key, eps)
        return action, exploration, carry

    recurrent = config.recurrent != "none"

    def window_targets(learner: DQNLearner, batch: Transition) -> jax.Array:
        """float32 ``(B,)`` targets of windows ``(B, n_step, ...)``: their first steps'."""
        ret = nstep_return(batch.reward, batch.terminated, batch.truncated, learner.hparams.gamma)
        rows = jnp.arange(ret.index.shape[0])
        next_obs = jax.tree.map(lambda x: x[rows, ret.index], batch.next_obs)
        bootstrap = next_state_value(
            q_of(learner.params, next_obs), q_of(learner.target_params, next_obs), config.double_q
        )
        return ret.reward + ret.discount * bootstrap

    def q_of(params: Any, obs: Any) -> jax.Array:
        return network.apply(params, obs, (), None)[1]

    def window_loss(learner: DQNLearner, batch: Transition, weight: jax.Array) -> Any:
        """The loss of windows ``(B, n_step, ...)``: the first step's TD error."""
        target = window_targets(learner, batch)
        obs = jax.tree.map(lambda x: x[:, 0], batch.obs)

        def loss_fn(params: Any) -> tuple[jax.Array, tuple]:
            q = q_of(params, obs)
            loss, td_error = q_learning_loss(q, batch.action[:, 0], target, weight, config.loss)
            return loss, (target - td_error, jnp.abs(td_error))

        return loss_fn

    def replay(learner: DQNLearner, batch: Transition) -> SequenceReplay:
        return replay_sequences(
            network, config.burn_in, learner.params, learner.target_params, batch
        )

    def loss_of(learner: DQNLearner, batch: Transition, weight: jax.Array) -> Any:
        if not recurrent:
            return window_loss(learner, batch, weight)
        return sequence_loss(network, config, replay(learner, batch), weight, learner.hparams.gamma)

    def targets(learner: DQNLearner, batch: Transition) -> jax.Array:
        if not recurrent:
            return window_targets(learner, batch)
        replayed = replay(learner, batch)
        steps = replayed.steps
        online = network.unroll(
            learner.params, steps.obs, replayed.online_start, steps.first, steps.next_obs
        )
        target = sequence_targets(config, replayed, online.successor_outputs, learner.hparams.gamma)
        return target.T

    def learn(learner: DQNLearner, batch: Transition, weight: jax.Array, key: PRNGKey) -> tuple:
        """One gradient step: ``(learner, metrics)``.

        With prioritized replay, also the windows' new priorities, float32 ``(B,)``.
        """
        hp = learner.hparams
        loss_fn = loss_of(learner, batch, weight)
        (loss, (q_taken, priority)), grads = jax.value_and_grad(loss_fn, has_aux=True)(
            learner.params
        )
        transformation = optimizer.transformation(hp, learner.steps)
        params, opt_state = step(transformation, learner.params, learner.opt_state, grads)
        steps = learner.steps + 1
        target_params = optax.periodic_update(
            polyak(learner.target_params, params, hp.tau),
            learner.target_params,
            steps,
            config.target_update_every,
        )
        learner = learner.replace(
            params=params, target_params=target_params, opt_state=opt_state, steps=steps
        )
        metrics = {"td_loss": loss, "q_value": q_taken.mean()}
        if config.prioritized:
            return learner, metrics, priority
        return learner, metrics

    def act(
        learner: DQNLearner,
        obs: Any,
        carry: Any,
        first: jax.Array,
        key: PRNGKey,
        deterministic: bool,
    ) -> tuple[jax.Array, Any]:
        """Greedy actions, or epsilon-greedy ones at the final epsilon: int32 ``(B,)``."""
        eps = jnp.where(deterministic, 0.0, learner.hparams.exploration_end)
        return epsilon_greedy(learner.params, obs, carry, first, key, eps)

    def with_budget(state: OffPolicyState, total_steps: int) -> OffPolicyState:
        """Stretch the exploration and learning-rate schedules to a new budget."""
        hp = state.learner.hparams
        fractions = [member.exploration_fraction for member in config.member_configs()]
        steps = jnp.asarray(np.asarray(fractions) * total_steps, jnp.float32)
        hp = stretch_schedule(hp, config.gradient_steps_in(total_steps))
        return state.replace(
            learner=state.learner.replace(hparams=hp.replace(exploration_steps=steps))
        )

    def q_values(state: OffPolicyState, obs: Any) -> jax.Array:
        """One seed's Q-values of observations ``(B, ...)`` (as the learner sees them)."""
        seen = observe_for_policy(state, obs, config.normalize_obs)
        batch = jax.tree.leaves(seen)[0].shape[0]
        first = jnp.ones((batch,), bool)
        return network.apply(state.learner.params, seen, network.initial_carry(batch), first)[1]

    learner = OffPolicyLearner(
        obs_spec=obs_spec,
        hyperparams=hyperparams,
        init=init_learner,
        explore=explore,
        learn=learn,
        metric_names=METRICS,
        act=act,
        with_budget=with_budget,
        importance_exponent=(lambda learner: learner.hparams.importance_exponent)
        if config.prioritized
        else None,
        initial_carry=network.initial_carry,
    )
    agent = build_offpolicy_agent("dqn", config, env, learner)
    every_seed = jax.jit(agent.per_seed(q_values, (LAYOUT, SEED)))
    return DQN(**vars(agent), q_values=every_seed, network=network, targets=targets)
