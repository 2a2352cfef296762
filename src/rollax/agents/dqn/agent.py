"""DQN as pieces for the shared training layer: ``make_dqn(config, env) -> Agent``.

The learner holds a Q-network, its target network, the optimizer's state and the
hyperparameters of one seed; the shared off-policy driver (:mod:`rollax.agents._offpolicy`)
acts with it into the replay buffer and calls :meth:`DQNParts.learn` for each gradient step.
Targets come from windows of ``n_step`` transitions (:func:`rollax.ops.nstep_return`): sums
stop at a termination, and a truncation bootstraps from its true final observation.

A recurrent Q-network (``recurrent="gru"`` or ``"lstm"``) learns as R2D2 does: each sampled
sequence is replayed from the carry stored with its first step, with the carry reset
wherever ``first`` marks an episode's first observation; ``burn_in`` steps refresh that
carry without gradient; the loss covers the remaining ``sequence_length`` steps, with
n-step (:func:`rollax.ops.nstep_targets`) or Peng's Q(λ) targets
(:func:`rollax.ops.lambda_returns`) built inside the sequence. A step that ended an episode
bootstraps from its final observation under the carry of the episode that ended.

:func:`make_dqn` only wires DQN's pieces: the methods of a :class:`DQNParts` (its Q-network,
optimizer and gradient step), each callable on one seed's :class:`DQNLearner`.
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
    GradientStep,
    Optimizer,
    OptimizerHyperParams,
    gradient_step_for,
    optimizer_values,
    polyak,
    shard_env,
    stretch_schedule,
)
from rollax.types import PRNGKey

__all__ = [
    "DQN",
    "DQNHyperParams",
    "DQNLearner",
    "DQNParts",
    "dqn_hyperparams",
    "epsilon",
    "make_dqn",
]

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


def dqn_hyperparams(config: DQNConfig) -> DQNHyperParams:
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
    """The exploration rate after ``env_steps`` steps per seed: linear, then constant.

    Args:
        hp: One seed's hyperparameters (float32 ``()`` leaves).
        env_steps: int32 ``()``: the seed's environment steps so far.

    Returns:
        float32 ``()``.
    """
    progress = env_steps.astype(jnp.float32) / jnp.maximum(hp.exploration_steps, 1.0)
    return linear_epsilon(hp.exploration_start, hp.exploration_end, progress)


@dataclasses.dataclass(frozen=True, eq=False)
class DQNParts:
    """What DQN's pieces take first: its Q-network, optimizer and gradient step, for one shard.

    Its methods are DQN's pieces (:meth:`learn`, :meth:`act` and the rest), each callable on
    one seed's :class:`DQNLearner`.

    Attributes:
        config: The configuration, validated.
        network: The Q-network (a :class:`~rollax.networks.Network`; recurrent when
            ``config.recurrent`` is not ``"none"``): float32 ``(B, num_actions)`` Q-values.
        obs_spec: One observation's shapes and dtypes, as the network sees it.
        num_actions: The number of discrete actions.
        optimizer: The static parts of the optimizer (with ``clip_grad_value``).
        step: The layer's gradient step (averages over the seed's shards).
    """

    config: DQNConfig
    network: Network
    obs_spec: Any
    num_actions: int
    optimizer: Optimizer
    step: GradientStep

    @property
    def recurrent(self) -> bool:
        """Whether the Q-network is recurrent (learns from sequences, as R2D2 does)."""
        return self.config.recurrent != "none"

    def q_of(self, params: Any, obs: Any) -> jax.Array:
        """A feed-forward network's Q-values: float32 ``(B, num_actions)`` of ``(B, ...)``."""
        return self.network.apply(params, obs, (), None)[1]

    def init(self, key: PRNGKey, hparams: DQNHyperParams) -> DQNLearner:
        """One seed's fresh learner: the target network starts as the online one.

        Args:
            key: The seed's key for the network's initialization.
            hparams: The seed's hyperparameters (float32 ``()`` leaves).
        """
        example = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), self.obs_spec)
        params = self.network.init(key, example)
        return DQNLearner(
            params=params,
            target_params=params,
            opt_state=self.optimizer.init(params),
            hparams=hparams,
            steps=jnp.zeros((), jnp.int32),
        )

    def epsilon_greedy(
        self,
        params: Any,
        obs: Any,
        carry: Any,
        first: jax.Array,
        key: PRNGKey,
        eps: jax.Array,
    ) -> tuple[jax.Array, Any]:
        """Greedy actions, or uniform ones with probability ``eps``, and the network's new carry.

        Args:
            params: The Q-network's parameters.
            obs: Observations, leaves ``(B, ...)`` (as the learner sees them).
            carry: The network's carry (``()`` for a feed-forward network).
            first: bool ``(B,)``: the observation opens an episode (a recurrent carry resets).
            key: The key of the uniform choices.
            eps: float32 ``()``: the exploration rate.

        Returns:
            int32 ``(B,)`` actions, and the carry after ``obs``.
        """
        carry, q = self.network.apply(params, obs, carry, first)
        return epsilon_greedy_action(q, key, eps), carry

    def explore(
        self,
        learner: DQNLearner,
        exploration: None,
        obs: Any,
        carry: Any,
        first: jax.Array,
        key: PRNGKey,
        env_steps: jax.Array,
    ) -> tuple:
        """The off-policy driver's ``explore``: epsilon-greedy at the seed's scheduled epsilon.

        Args:
            learner: One seed's learner.
            exploration: ``None`` (DQN keeps no exploration state).
            obs: One shard's observations, leaves ``(E, ...)`` (normalized if asked).
            carry: The learner's carry (``()`` for a feed-forward learner).
            first: bool ``(E,)``: the observation opens an episode.
            key: The key of the uniform choices.
            env_steps: int32 ``()``: the seed's environment steps so far (:func:`epsilon`).

        Returns:
            ``(action, exploration, carry)``: int32 ``(E,)`` actions, ``None`` and the new carry.
        """
        eps = epsilon(learner.hparams, env_steps)
        action, carry = self.epsilon_greedy(learner.params, obs, carry, first, key, eps)
        return action, exploration, carry

    def window_targets(self, learner: DQNLearner, batch: Transition) -> jax.Array:
        """The targets of feed-forward windows: float32 ``(B,)``, their first steps'.

        Args:
            learner: One seed's learner.
            batch: Windows of ``n_step`` transitions, leaves ``(B, n_step, ...)``.
        """
        ret = nstep_return(batch.reward, batch.terminated, batch.truncated, learner.hparams.gamma)
        rows = jnp.arange(ret.index.shape[0])
        next_obs = jax.tree.map(lambda x: x[rows, ret.index], batch.next_obs)
        bootstrap = next_state_value(
            self.q_of(learner.params, next_obs),
            self.q_of(learner.target_params, next_obs),
            self.config.double_q,
        )
        return ret.reward + ret.discount * bootstrap

    def window_loss(self, learner: DQNLearner, batch: Transition, weight: jax.Array) -> Any:
        """``params -> (loss, (q_taken, priority))`` on feed-forward windows: the first step's TD.

        Args:
            learner: One seed's learner (its targets, fixed).
            batch: Windows of ``n_step`` transitions, leaves ``(B, n_step, ...)``.
            weight: float32 ``(B,)``: importance weights (ones without prioritized replay).

        The loss is a float32 scalar; ``q_taken`` float32 ``(B,)`` the Q-values of the taken
        actions and ``priority`` float32 ``(B,)`` the absolute TD errors.
        """
        target = self.window_targets(learner, batch)
        obs = jax.tree.map(lambda x: x[:, 0], batch.obs)
        config = self.config

        def loss_fn(params: Any) -> tuple[jax.Array, tuple]:
            q = self.q_of(params, obs)
            loss, td_error = q_learning_loss(q, batch.action[:, 0], target, weight, config.loss)
            return loss, (target - td_error, jnp.abs(td_error))

        return loss_fn

    def replay(self, learner: DQNLearner, batch: Transition) -> SequenceReplay:
        """A recurrent learner's replay of sequences (:func:`replay_sequences`).

        Args:
            learner: One seed's learner.
            batch: Sequences, leaves ``(B, burn_in + sequence_length, ...)``, with ``first`` and
                ``carry``.
        """
        return replay_sequences(
            self.network, self.config.burn_in, learner.params, learner.target_params, batch
        )

    def loss(self, learner: DQNLearner, batch: Transition, weight: jax.Array) -> Any:
        """``params -> (loss, (q_taken, priority))`` of one seed's batch.

        :meth:`window_loss` for a feed-forward learner, :func:`sequence_loss` on
        :meth:`replay`'s sequences for a recurrent one. ``weight``: float32 ``(B,)``;
        ``priority``: float32 ``(B,)``.
        """
        if not self.recurrent:
            return self.window_loss(learner, batch, weight)
        replay = self.replay(learner, batch)
        return sequence_loss(self.network, self.config, replay, weight, learner.hparams.gamma)

    def targets(self, learner: DQNLearner, batch: Transition) -> jax.Array:
        """The TD targets one seed's learner trains on, for a batch as replay samples it.

        Args:
            learner: One seed's learner.
            batch: Windows ``(B, n_step, ...)``, or a recurrent learner's sequences ``(B,
                burn_in + sequence_length, ...)`` (observations as the learner sees them).

        Returns:
            float32 ``(B,)`` for windows, ``(B, sequence_length)`` for sequences.
        """
        if not self.recurrent:
            return self.window_targets(learner, batch)
        replayed = self.replay(learner, batch)
        steps = replayed.steps
        online = self.network.unroll(
            learner.params, steps.obs, replayed.online_start, steps.first, steps.next_obs
        )
        gamma = learner.hparams.gamma
        target = sequence_targets(self.config, replayed, online.successor_outputs, gamma)
        return target.T

    def learn(
        self, learner: DQNLearner, batch: Transition, weight: jax.Array, key: PRNGKey
    ) -> tuple:
        """One gradient step, then the target network's (periodic, Polyak) update.

        Args:
            learner: One seed's learner.
            batch: As :meth:`targets` takes it (leaves ``(B, replay_length, ...)``).
            weight: float32 ``(B,)``: importance weights (ones without prioritized replay).
            key: Unused (DQN's step draws nothing).

        Returns:
            ``(learner, metrics)``: ``metrics`` float32 scalars ``td_loss`` and ``q_value``.
            With prioritized replay also the new priorities, float32 ``(B,)``.
        """
        config, hp = self.config, learner.hparams
        loss_fn = self.loss(learner, batch, weight)
        (loss, (q_taken, priority)), grads = jax.value_and_grad(loss_fn, has_aux=True)(
            learner.params
        )
        transformation = self.optimizer.transformation(hp, learner.steps)
        params, opt_state = self.step(transformation, learner.params, learner.opt_state, grads)
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
        self,
        learner: DQNLearner,
        obs: Any,
        carry: Any,
        first: jax.Array,
        key: PRNGKey,
        deterministic: bool,
    ) -> tuple[jax.Array, Any]:
        """Greedy actions, or epsilon-greedy ones at the final epsilon, for evaluation and video.

        ``obs`` leaves ``(B, ...)`` as the learner sees them, ``first`` bool ``(B,)``; returns
        int32 ``(B,)`` actions and the new carry (as :meth:`epsilon_greedy`).
        """
        eps = jnp.where(deterministic, 0.0, learner.hparams.exploration_end)
        return self.epsilon_greedy(learner.params, obs, carry, first, key, eps)

    def with_budget(self, state: OffPolicyState, total_steps: int) -> OffPolicyState:
        """Stretch the exploration and learning-rate schedules to a new budget.

        The layer calls it on the whole state (every member on the seed axis, hyperparameters
        float32 ``(members,)``), not on one seed's: each member's ``exploration_steps`` comes
        from its own ``exploration_fraction`` (``config.member_configs()``).
        """
        config = self.config
        hp = state.learner.hparams
        fractions = [member.exploration_fraction for member in config.member_configs()]
        steps = jnp.asarray(np.asarray(fractions) * total_steps, jnp.float32)
        hp = stretch_schedule(hp, config.gradient_steps_in(total_steps))
        return state.replace(
            learner=state.learner.replace(hparams=hp.replace(exploration_steps=steps))
        )

    def q_values(self, state: OffPolicyState, obs: Any) -> jax.Array:
        """One seed's online Q-values, float32 ``(B, num_actions)``, of raw observations.

        Normalized inside when ``normalize_obs``; a recurrent network sees each observation as
        the first of an episode (a fresh carry).
        """
        seen = observe_for_policy(state, obs, self.config.normalize_obs)
        batch = jax.tree.leaves(seen)[0].shape[0]
        first = jnp.ones((batch,), bool)
        network = self.network
        return network.apply(state.learner.params, seen, network.initial_carry(batch), first)[1]


def _num_actions(env: VecEnv) -> int:
    """The number of ``env``'s discrete actions; a ``ValueError`` for other actions."""
    if not isinstance(env.action_space, Discrete):
        raise ValueError(
            f"make_dqn: DQN chooses among discrete actions; {env.env_id} has "
            f"{env.action_space!r}. Use SAC (rollax.agents.sac) for continuous actions."
        )
    return int(env.action_space.n)


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
    env = shard_env("make_dqn", config, env, host=True, **make_options)
    num_actions = _num_actions(env)
    network, obs_spec = q_network(
        config, env.observation_space, num_actions, dueling=config.dueling
    )
    parts = DQNParts(
        config=config,
        network=network,
        obs_spec=obs_spec,
        num_actions=num_actions,
        optimizer=Optimizer.of(config, clip_value=config.clip_grad_value),
        step=gradient_step_for(config),
    )
    learner = OffPolicyLearner(
        obs_spec=obs_spec,
        hyperparams=dqn_hyperparams,
        init=parts.init,
        explore=parts.explore,
        learn=parts.learn,
        metric_names=METRICS,
        act=parts.act,
        with_budget=parts.with_budget,
        importance_exponent=(lambda lr: lr.hparams.importance_exponent)
        if config.prioritized
        else None,
        initial_carry=network.initial_carry,
    )
    agent = build_offpolicy_agent("dqn", config, env, learner)
    every_seed = jax.jit(agent.per_seed(parts.q_values, (LAYOUT, SEED)))
    return DQN(**vars(agent), q_values=every_seed, network=network, targets=parts.targets)
