"""What on-policy agents share: rollouts, epochs of minibatches over them, and bootstraps.

An on-policy agent (PPO, PQN) provides an :class:`OnPolicyLearner`: its network, how it
acts on the network's outputs, the value of an observation, the targets it learns from a
rollout and its loss on a minibatch. :func:`build_onpolicy_agent` supplies the rest:

- :class:`OnPolicyState`: parameters, optimizer state and hyperparameters with the
  environments, observation statistics, keys and counters.
- The rollout: ``num_steps`` steps of every environment with the learner's ``explore``,
  the recurrent carry threaded through them (fresh where ``first`` marks an episode's first
  observation, and stored before each step), and the value of each step's true successor
  (``next_value``): the next observation's while the episode goes on, ``final_obs``'s where
  it ended, under the carry of the episode that ended.
- The update: the learner's targets, then ``num_epochs`` passes of ``num_minibatches``
  shuffled minibatches (single transitions, or for a recurrent network sequences of
  ``chunk_length`` steps replayed from their stored carries, with an optional burn-in),
  each a gradient step of the learner's loss through :class:`rollax.training.GradientStep`.

Everything is written for one seed on one shard of its environments (``num_envs //
num_shards`` of them): the training layer maps it over seeds and shards and places it on
devices. A shard shuffles its own minibatches; the gradient of each minibatch is averaged
over the seed's shards in the layer's one gradient step.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from rollax._struct import pytree_dataclass
from rollax.agents._minibatches import (
    Sequences,
    replay,
    rollout_sequences,
    shuffled_samples,
    shuffled_sequences,
)
from rollax.agents._onpolicy_config import OnPolicyConfig
from rollax.envs import EnvParams, EnvState, VecEnv, at_most_once
from rollax.host import MemberEnvs
from rollax.ops import (
    normalize_observation,
    observation_stats,
    random_shift,
    update_observation_stats,
)
from rollax.spaces import is_image_key
from rollax.training import (
    ENV_PARAMS,
    SEED,
    SHARD,
    SHARED,
    Agent,
    AgentPieces,
    GradientStep,
    Optimizer,
    Policy,
    ShardStart,
    build_agent,
    build_host_agent,
    gradient_step_for,
    host_loop,
    stretch_schedule,
)
from rollax.types import PRNGKey

__all__ = [
    "LAYOUT",
    "OnPolicyAgent",
    "OnPolicyDriver",
    "OnPolicyLearner",
    "OnPolicyState",
    "Rollout",
    "act",
    "bootstrap",
    "build_onpolicy_agent",
    "final_value",
    "init_state",
    "iteration",
    "learn",
    "policy_step",
    "rollout",
    "update",
]


@pytree_dataclass
class OnPolicyState:
    """Everything an on-policy run needs to continue.

    Save it, restore it, and training goes on as if it had never stopped. Leaves as the
    training layer holds them (``LAYOUT``): per-seed leaves lead with ``(num_seeds,)``,
    per-shard leaves with ``(num_seeds, num_shards)`` and then the shard's ``E = num_envs //
    num_shards`` environments.

    Attributes:
        params: The network's parameters, per seed.
        opt_state: The optimizer's state (Adam's: ``optax.ScaleByAdamState``), per seed.
        obs_stats: Running observation statistics, per seed: a ``RunningStats``, or for dict
            observations a dict of them for the vector entries (images are only scaled).
        hparams: The agent's hyperparameters (an
            :class:`~rollax.training.OptimizerHyperParams`), per seed.
        env_state: Each shard's environments, ``(E, ...)`` per shard.
        obs: Their current observations, ``(E, *obs_shape)`` per shard (for dict
            observations, every entry).
        first: bool ``(E,)`` per shard: the current observation opens an episode.
        carry: The network's carry for the current observations, per shard (``()`` for a
            feed-forward network).
        key: Each shard's key for acting and shuffling minibatches.
        env_params: The environment's params (a curriculum may change them between runs):
            leaves as the defaults, or with a leading ``num_seeds * num_envs`` axis.
        env_steps: int32 ``()``, environment steps taken per seed.
        updates: int32 ``()``, updates (one per rollout) done.
    """

    params: Any
    opt_state: Any
    obs_stats: Any
    hparams: Any
    env_state: EnvState
    obs: Any
    first: jax.Array
    carry: Any
    key: PRNGKey
    env_params: EnvParams
    env_steps: jax.Array
    updates: jax.Array


LAYOUT = OnPolicyState(
    params=SEED,
    opt_state=SEED,
    obs_stats=SEED,
    hparams=SEED,
    env_state=SHARD,
    obs=SHARD,
    first=SHARD,
    carry=SHARD,
    key=SHARD,
    env_params=ENV_PARAMS,
    env_steps=SHARED,
    updates=SHARED,
)
"""Where each part of :class:`OnPolicyState` lives (see :mod:`rollax.training`'s layouts)."""


class Rollout(NamedTuple):
    """One rollout step of every environment (leaves ``(N, ...)``, stacked to ``(T, N, ...)``).

    ``value`` is the learner's value of ``obs`` (PPO's critic; PQN's greedy Q-value), and
    ``next_value`` the value of the transition's true successor: the value of the next
    observation while the episode goes on, the value of ``final_obs`` where it ended (used
    only if truncated; terminated transitions do not bootstrap), computed with the carry of
    the episode that ended. ``first`` is the pre-step flag the network saw with ``obs``
    (the observation opens an episode), and ``carry`` the network's carry before the step
    (``()`` for a feed-forward network): a recurrent loss replays its sequences from them.
    ``extras`` holds what the learner's ``explore`` recorded beside each action (PPO: its
    ``"log_prob"``).
    """

    obs: jax.Array
    first: jax.Array
    action: jax.Array
    value: jax.Array
    reward: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    next_value: jax.Array
    episode_return: jax.Array
    carry: Any = ()
    extras: Any = ()


@dataclasses.dataclass(frozen=True)
class OnPolicyLearner:
    """An on-policy algorithm's own part, for one seed on one shard.

    ``outputs`` below are the network's outputs after the carry (PPO's ``(distribution,
    value)``, PQN's ``(q_values,)``), with the observations' leading axes.

    Attributes:
        network: ``init(key, obs) -> params`` for one observation ``obs`` (no batch axis),
            ``initial_carry(batch) -> carry`` (``()`` for a feed-forward network) and
            ``apply(params, obs, carry, first) -> (carry, *outputs)`` for observations
            ``(B, ...)`` with ``first`` ``(B,)``, or sequences ``(T, B, ...)`` with
            ``first`` ``(T, B)`` for a recurrent network.
        obs_spec: One observation's shapes and dtypes (:func:`rollax.spaces.observation_spec`).
        optimizer: The static parts of its optimizer.
        hyperparams: ``config -> hparams``: one seed's hyperparameters as data, an
            :class:`~rollax.training.OptimizerHyperParams` whose schedule spans the budget's
            updates.
        explore: ``(state, outputs, key) -> (action, extras)``: the rollout's actions
            ``(E, ...)``; ``extras`` (a pytree of ``(E, ...)`` arrays, or ``()``) is kept in
            the :class:`Rollout`.
        act: ``(state, outputs, key, deterministic) -> action``: evaluation's and video's
            actions (``state`` one seed's), the greedy ones when ``deterministic``.
        value: ``outputs -> value``: float32 ``(B,)`` value of each observation, what the
            step before it bootstraps from.
        targets: ``(hparams, rollout) -> tuple``: per-step arrays ``(T, E, ...)`` the loss
            learns from (PPO: actions, log-probabilities, values, advantages, returns).
        loss: ``(hparams, outputs, targets) -> (loss, aux)``: a minibatch's loss from the
            network's replayed outputs and its slice of ``targets``; ``aux`` a tuple of
            scalars, one per ``metric_names``.
        metric_names: What ``aux`` holds; iterations report their means.
    """

    network: Any
    obs_spec: Any
    optimizer: Optimizer
    hyperparams: Callable[[Any], Any]
    explore: Callable[[OnPolicyState, tuple, PRNGKey], tuple[jax.Array, Any]]
    act: Callable[[OnPolicyState, tuple, PRNGKey, bool], jax.Array]
    value: Callable[[tuple], jax.Array]
    targets: Callable[[Any, Rollout], tuple]
    loss: Callable[[Any, tuple, tuple], tuple[jax.Array, tuple]]
    metric_names: tuple[str, ...]


@dataclasses.dataclass(frozen=True, eq=False)
class OnPolicyAgent(Agent):
    """An on-policy :class:`~rollax.training.Agent`, with its rollout and network to inspect.

    Attributes:
        collect: ``state -> (state, rollout)``: one rollout without an update, a
            :class:`Rollout` with leaves ``(num_steps, num_seeds * num_envs, ...)`` (seed by
            seed, each seed's shards in order).
        network: The network every part of the agent calls.

    Its ``driver`` is its :class:`OnPolicyDriver`: the one-seed, one-shard pieces
    (:func:`rollout`, :func:`update`, :func:`iteration`) take it first.
    """

    collect: Any = None
    network: Any = None


@dataclasses.dataclass(frozen=True, eq=False)
class OnPolicyDriver:
    """What an on-policy agent's pieces close over: its static parts, for one seed on one shard.

    :func:`init_state`, :func:`rollout`, :func:`update`, :func:`iteration` and :func:`act`
    take it first; each can be called (and jitted) on its own with a one-seed, one-shard
    :class:`OnPolicyState` (no seed or shard axis).

    Attributes:
        config: The algorithm's configuration.
        env: One shard's environments (``E = num_envs // num_shards``).
        learner: The algorithm's own part.
        gradient_step: The layer's gradient step (:func:`rollax.training.gradient_step_for`):
            the mean over the seed's shards, which observation statistics share.
    """

    config: OnPolicyConfig
    env: VecEnv
    learner: OnPolicyLearner
    gradient_step: GradientStep = dataclasses.field(default_factory=GradientStep)

    @functools.cached_property
    def recurrent(self) -> bool:
        """Whether the network has a carry (its loss replays sequences)."""
        network = self.learner.network
        return bool(jax.tree.leaves(jax.eval_shape(lambda: network.initial_carry(1))))

    @property
    def augment(self) -> bool:
        """Whether the loss shifts its images (``augment_pixels`` with image observations)."""
        spec = self.learner.obs_spec
        image_keys = [k for k in (spec if isinstance(spec, dict) else {}) if is_image_key(k)]
        return self.config.augment_pixels and bool(image_keys)

    def observe(self, stats: Any, obs: Any) -> Any:
        """Observations as the network sees them (normalized where the config says)."""
        return normalize_observation(stats, obs) if self.config.normalize_obs else obs


def init_state(
    driver: OnPolicyDriver, key: PRNGKey, start: ShardStart, hparams: Any
) -> OnPolicyState:
    """One shard's state from the seed's ``key``, the shard's start and the hyperparameters."""
    learner, network, n = driver.learner, driver.learner.network, driver.env.num_envs
    example = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), learner.obs_spec)
    params = network.init(key, example)
    return OnPolicyState(
        params=params,
        opt_state=learner.optimizer.init(params),
        obs_stats=observation_stats(learner.obs_spec),
        hparams=hparams,
        env_state=start.env_state,
        obs=start.obs,
        first=jnp.ones(n, jnp.bool_),
        carry=network.initial_carry(n),
        key=start.key,
        env_params=start.env_params,
        env_steps=jnp.zeros((), jnp.int32),
        updates=jnp.zeros((), jnp.int32),
    )


def policy_step(
    driver: OnPolicyDriver, state: OnPolicyState, obs: Any, first: jax.Array, carry: Any,
    key: PRNGKey,
) -> tuple[PRNGKey, Any, jax.Array, Any, tuple]:  # fmt: skip
    """The policy at one rollout step, before the environments step.

    Args:
        driver: The agent's driver.
        state: One seed's state on one shard (its parameters and statistics act).
        obs: The environments' observations, ``(E, *obs_shape)``.
        first: bool ``(E,)``: each observation opens an episode.
        carry: The network's carry before the step.
        key: The rollout's key.

    Returns:
        ``(key, carry, action, extras, outputs)``: the key advanced, the carry after the
        step, the actions ``(E, ...)`` with what ``explore`` recorded beside them, and the
        network's outputs (the learner's ``value`` reads the step's value from them).
    """
    learner, network = driver.learner, driver.learner.network
    key, action_key = jax.random.split(key)
    carry, *outputs = network.apply(
        state.params, driver.observe(state.obs_stats, obs), carry, first
    )
    action, extras = learner.explore(state, tuple(outputs), action_key)
    return key, carry, action, extras, tuple(outputs)


def final_value(
    driver: OnPolicyDriver, state: OnPolicyState, final_obs: Any, carry: Any, first: jax.Array
) -> jax.Array:
    """float32 ``(E,)``: the value of each environment's final observation.

    Computed with the carry of the episode that ended (the final observation continues it:
    no reset); read only where an episode ended.
    """
    network = driver.learner.network
    outputs = network.apply(
        state.params, driver.observe(state.obs_stats, final_obs), carry, jnp.zeros_like(first)
    )
    return driver.learner.value(outputs[1:])


def bootstrap(
    driver: OnPolicyDriver, state: OnPolicyState, records: Rollout, obs: Any, carry: Any,
    first: jax.Array,
) -> Rollout:  # fmt: skip
    """``records`` with every step's ``next_value``: its true successor's value.

    The successor of step ``t`` is step ``t + 1``'s observation (the last step's: ``obs``,
    under ``carry`` and ``first`` after the rollout) unless an episode ended there; then it
    is the final observation's value the rollout stored.
    """
    network, learner = driver.learner.network, driver.learner
    last = network.apply(state.params, driver.observe(state.obs_stats, obs), carry, first)
    following = jnp.concatenate([records.value[1:], learner.value(last[1:])[None]])
    done = records.terminated | records.truncated
    return records._replace(next_value=jnp.where(done, records.next_value, following))


def rollout(driver: OnPolicyDriver, state: OnPolicyState) -> tuple[OnPolicyState, Rollout]:
    """``num_steps`` steps of the shard's environments: a :class:`Rollout`, leaves ``(T, E, ...)``.

    The state comes back with its environments, observations, carry and key advanced.
    Each step is :func:`policy_step`, the environments' step and, where an episode ended,
    :func:`final_value`; :func:`bootstrap` fills in the successors' values.
    """
    env, learner, n = driver.env, driver.learner, driver.env.num_envs

    def step_env(carry: tuple, _: None) -> tuple:
        env_state, obs, first, net_carry, key = carry
        carry_before = net_carry
        key, net_carry, action, extras, outputs = policy_step(
            driver, state, obs, first, net_carry, key
        )
        env_state, ts = env.step(env_state, action.astype(env.action_space.dtype), state.env_params)
        # Values of final observations, needed only where an episode ended (elsewhere the
        # next step's value is the successor's): computed only on steps where one did.
        final = at_most_once(
            ts.done.any(),
            lambda _: final_value(driver, state, ts.final_obs, net_carry, first),
            jnp.zeros(n, jnp.float32),
        )
        record = Rollout(
            obs=obs,
            first=first,
            action=action,
            value=learner.value(outputs),
            reward=ts.reward,
            terminated=ts.terminated,
            truncated=ts.truncated,
            next_value=final,
            episode_return=jnp.where(ts.done, ts.info["episode_return"], jnp.nan),
            carry=carry_before if driver.recurrent else (),
            extras=extras,
        )
        return (env_state, ts.obs, ts.done, net_carry, key), record

    start = (state.env_state, state.obs, state.first, state.carry, state.key)
    steps = driver.config.num_steps
    (env_state, obs, first, net_carry, key), records = jax.lax.scan(step_env, start, None, steps)
    records = bootstrap(driver, state, records, obs, net_carry, first)
    state = state.replace(env_state=env_state, obs=obs, first=first, carry=net_carry, key=key)
    return state, records


def _loss(
    driver: OnPolicyDriver, params: Any, hp: Any, stats: Any, mb: Sequences, key: PRNGKey | None
) -> tuple:
    """The learner's loss on a minibatch, replayed from its stored carries.

    With a ``key``, every image is shifted first (DrQ's augmentation).
    """
    shift = None
    if key is not None:
        shift = lambda obs: random_shift(key, obs, driver.config.shift_pad)  # noqa: E731
    outputs = replay(
        driver.learner.network, params, mb, lambda obs: driver.observe(stats, obs), shift
    )
    return driver.learner.loss(hp, outputs, mb.steps[2:])


def _minibatches(driver: OnPolicyDriver, steps: tuple, data: Rollout) -> Callable:
    """``key -> Sequences``: one epoch's shuffled minibatches of a rollout's ``steps``.

    Single transitions, or for a recurrent network sequences of ``chunk_length`` steps with
    their stored carries (and burn-in).
    """
    config, n, t = driver.config, driver.env.num_envs, driver.config.num_steps
    if driver.recurrent:
        chunk = config.chunk_length or config.num_steps
        sequences = rollout_sequences(
            steps, data.obs, data.carry, data.first, chunk, config.burn_in
        )
        return lambda key: shuffled_sequences(key, sequences, config.num_minibatches)
    batch = jax.tree.map(lambda x: x.reshape(n * t, *x.shape[2:]), steps)
    return lambda key: Sequences(shuffled_samples(key, batch, config.num_minibatches), carry=())


def update(
    driver: OnPolicyDriver, state: OnPolicyState, data: Rollout, key: PRNGKey
) -> tuple[Any, Any, tuple]:
    """The seed's update from this shard's rollout (leaves ``(T, E, ...)``).

    ``num_epochs`` passes of ``num_minibatches`` shuffled minibatches, each a gradient step
    of the learner's loss. Returns the new ``(params, opt_state)`` and the mean of each of
    the learner's metrics.
    """
    config, learner, hp = driver.config, driver.learner, state.hparams
    cut = _minibatches(driver, (data.obs, data.first, *learner.targets(hp, data)), data)
    transformation = learner.optimizer.transformation(hp, state.updates)

    def epoch(carry: tuple, key: PRNGKey) -> tuple:
        if driver.augment:
            key, aug_key = jax.random.split(key)
            aug_keys = jax.random.split(aug_key, config.num_minibatches)
        else:
            aug_keys = None

        def minibatch(carry: tuple, xs: tuple) -> tuple:
            params, opt_state = carry
            mb, aug = xs
            grads, aux = jax.grad(functools.partial(_loss, driver), has_aux=True)(
                params, hp, state.obs_stats, mb, aug
            )
            params, opt_state = driver.gradient_step(transformation, params, opt_state, grads)
            return (params, opt_state), aux

        return jax.lax.scan(minibatch, carry, (cut(key), aug_keys))

    (params, opt_state), aux = jax.lax.scan(
        epoch, (state.params, state.opt_state), jax.random.split(key, config.num_epochs)
    )
    return params, opt_state, jax.tree.map(jnp.mean, aux)


def iteration(
    driver: OnPolicyDriver, state: OnPolicyState
) -> tuple[OnPolicyState, dict[str, jax.Array]]:
    """One rollout and the update from it: the loop's step (see :class:`AgentPieces`)."""
    state, data = rollout(driver, state)
    return learn(driver, state, data)


def learn(
    driver: OnPolicyDriver, state: OnPolicyState, data: Rollout
) -> tuple[OnPolicyState, dict[str, jax.Array]]:
    """What follows a rollout, whoever collected it: the update, statistics and counters.

    ``data`` is this shard's :class:`Rollout` (leaves ``(T, E, ...)``), from :func:`rollout`
    or from environments stepped outside the program; ``state`` the state after it (its
    key advanced by the rollout). Returns the new state and this shard's metrics:
    ``episodes``, ``return_sum`` and the learner's means.
    """
    config = driver.config
    key, update_key = jax.random.split(state.key)
    params, opt_state, aux = update(driver, state, data, update_key)
    stats = state.obs_stats
    if config.normalize_obs:
        step = driver.gradient_step
        stats = update_observation_stats(stats, data.obs, step.shard_mean, step.num_shards)
    finished = ~jnp.isnan(data.episode_return)
    metrics = {
        "episodes": finished.sum(dtype=jnp.int32),
        "return_sum": jnp.where(finished, data.episode_return, 0.0).sum(),
        **dict(zip(driver.learner.metric_names, aux, strict=True)),
    }
    state = state.replace(
        params=params,
        opt_state=opt_state,
        obs_stats=stats,
        key=key,
        env_steps=state.env_steps + config.batch_size,
        updates=state.updates + 1,
    )
    return state, metrics


def act(
    driver: OnPolicyDriver,
    state: OnPolicyState,
    obs: Any,
    carry: Any,
    first: jax.Array,
    key: PRNGKey,
    deterministic: bool,
) -> tuple[jax.Array, Any]:
    """One seed's actions for observations ``(B, *obs_shape)``, and the next carry."""
    network = driver.learner.network
    carry, *outputs = network.apply(
        state.params, driver.observe(state.obs_stats, obs), carry, first
    )
    return driver.learner.act(state, tuple(outputs), key, deterministic), carry


def build_onpolicy_agent(
    name: str,
    config: OnPolicyConfig,
    env: VecEnv,
    learner: OnPolicyLearner,
    agent_type: type[OnPolicyAgent] = OnPolicyAgent,
) -> OnPolicyAgent:
    """Compose a learner into an on-policy agent (see the module's docstring).

    The pieces are this module's functions on an :class:`OnPolicyDriver`; the layer maps them
    over seeds and shards.

    Args:
        name: The algorithm's registered name.
        config: Its configuration, validated.
        env: One shard's environments (:func:`rollax.training.shard_env`), or every member's
            environments on the host (a ``MemberEnvs``): its loop is then a Python loop
            around the host's step (rollax.training's host composition).
        learner: The algorithm's own part.
        agent_type: The agent class to build (an :class:`OnPolicyAgent`).
    """
    driver = OnPolicyDriver(config, env, learner, gradient_step_for(config))
    network, t = learner.network, config.num_steps

    def with_budget(state: OnPolicyState, total_steps: int) -> OnPolicyState:
        """Stretch the schedules to a new budget (every member's)."""
        return state.replace(
            hparams=stretch_schedule(state.hparams, total_steps // config.batch_size)
        )

    pieces = AgentPieces(
        state_layout=LAYOUT,
        hyperparams=learner.hyperparams,
        init=functools.partial(init_state, driver),
        iteration=functools.partial(iteration, driver),
        steps_per_iteration=config.batch_size,
        unit_name="rollouts of num_envs * num_steps",
        metric_names=learner.metric_names,
        policy=Policy(
            init_carry=lambda state, batch: network.initial_carry(batch),
            act=functools.partial(act, driver),
        ),
        with_budget=with_budget,
        driver=driver,
        run_cpu_level=1,  # LLVM level 1 on the CPU: less compile work, as fast to run
    )
    if isinstance(env, MemberEnvs):  # environments that step on the host
        from rollax.agents._onpolicy_host import OnPolicyHostIteration

        loop = host_loop(name, config, env, pieces, network.initial_carry)
        host_iteration = OnPolicyHostIteration(loop, driver)
        return build_host_agent(name, loop, host_iteration, agent_type,
                                collect=host_iteration.collect, network=network)  # fmt: skip
    agent = build_agent(name, config, env, pieces)
    every_shard = agent.on_every_shard(functools.partial(rollout, driver))

    def collect(state: OnPolicyState) -> tuple[OnPolicyState, Rollout]:
        """One rollout of every seed's shards, without an update."""
        state, records = every_shard(state)
        # (seeds, shards, T, E, ...) -> (T, seeds * num_envs, ...)
        records = jax.tree.map(
            lambda x: jnp.moveaxis(x, 2, 0).reshape(t, -1, *x.shape[4:]), records
        )
        return state, records

    return agent_type(**vars(agent), collect=jax.jit(collect), network=network)
