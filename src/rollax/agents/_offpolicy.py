"""What off-policy agents share: acting into a replay buffer, and learning from it.

An off-policy agent (DQN, SAC, TD3) provides a *learner*: its networks, target networks,
optimizers and hyperparameters, with two pure functions, ``act`` (exploration) and
``learn`` (one gradient step on a sampled batch), and for a recurrent learner the carry of
its network at an episode's start. This module supplies the rest:

- :class:`OffPolicyState`: the learner with the replay buffer, observation statistics,
  environments, keys and counters.
- The pieces, functions of an :class:`OffPolicyDriver` (its static parts), each callable
  on its own: :func:`act_and_store` steps every environment once with the learner's
  ``act`` and stores each transition with its true successor (``final_obs`` at an episode
  end); :func:`learn_from_replay` takes ``gradient_steps`` gradient steps, each on a batch
  of windows of ``replay_length`` consecutive transitions (``n_step``; a recurrent
  learner's sequences), with priorities updated when prioritized; :func:`iteration` acts
  ``train_every`` times, then learns once ``learning_starts`` transitions per seed are
  stored.

A recurrent learner's carry is threaded through acting like the environments' state: it
starts fresh where ``first`` marks an episode's first observation, and every stored
transition keeps ``first`` and the carry that met its observation, so a sampled sequence
is replayed from its first step's carry with the same resets.

Everything is written for one seed on one shard: the shard's environments fill the shard's
own replay buffer (``buffer_size / num_shards``), each gradient step samples
``batch_size / num_shards`` windows from it, and the learner's gradient step averages the
gradients over the seed's shards. The training layer maps it over seeds and shards.

The replay buffer's own side (its size per shard, the transition it stores, the n-step
windows learners read) is ``rollax.agents._replay``.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp

from rollax._struct import pytree_dataclass
from rollax.agents._replay import replay_buffer, transition_example
from rollax.buffers import BufferState, SequenceBuffer, Transition
from rollax.envs import EnvParams, EnvState, VecEnv
from rollax.host import MemberEnvs
from rollax.networks import no_carry
from rollax.ops import (
    normalize_observation,
    observation_stats,
    update_observation_stats,
)
from rollax.training import (
    ENV_PARAMS,
    SEED,
    SHARD,
    SHARED,
    Agent,
    AgentPieces,
    GradientStep,
    Policy,
    ShardStart,
    build_agent,
    build_host_agent,
    gradient_step_for,
    host_loop,
)
from rollax.types import PRNGKey

__all__ = [
    "checkpoint_hooks",
    "LAYOUT",
    "OffPolicyLearner",
    "OffPolicyState",
    "build_offpolicy_agent",
    "feedforward_explore",
    "feedforward_act",
    "OffPolicyDriver",
    "act_and_store",
    "explore",
    "init_offpolicy_state",
    "iteration",
    "learn_from_replay",
    "learning_phase",
    "store",
    "observe_for_policy",
]


@pytree_dataclass
class OffPolicyState:
    """Everything an off-policy run needs to continue.

    Save it, restore it, and training goes on as if it had never stopped (the replay
    buffer included). Leaves as the training layer holds them (``LAYOUT``): per-seed
    leaves lead with ``(num_seeds,)``, per-shard leaves with ``(num_seeds, num_shards)``.

    Attributes:
        learner: The agent's learner state (networks, targets, optimizers, hyperparameters),
            per seed.
        exploration: The exploration state of each shard's environments (the correlated
            noise of SAC and TD3), per shard; ``None`` for agents without one.
        buffer: Each shard's replay (a :class:`~rollax.buffers.BufferState`).
        obs_stats: Running observation statistics, per seed (used with ``normalize_obs``).
        env_state: Each shard's environments.
        obs: Their current observations, leaves ``(num_envs // num_shards, ...)`` per shard.
        first: bool ``(num_envs // num_shards,)`` per shard: the current observation opens
            an episode.
        carry: A recurrent learner's carry for the current observations, per shard (``()``
            for a feed-forward learner).
        key: Each shard's key for exploration and sampling.
        env_params: The environment's params (a curriculum may change them between runs).
        env_steps: int32 ``()``: environment steps (transitions) per seed so far.
        updates: int32 ``()``: gradient steps per seed so far.
        stored: int32 ``()``: transitions per seed in the replay (at most its capacity);
            learning waits until ``learning_starts`` are.
    """

    learner: Any
    exploration: Any
    buffer: BufferState
    obs_stats: Any
    env_state: EnvState
    obs: Any
    first: jax.Array
    carry: Any
    key: PRNGKey
    env_params: EnvParams
    env_steps: jax.Array
    updates: jax.Array
    stored: jax.Array

    @property
    def params(self) -> Any:
        """The learner's trained parameters (what the NaN guard checks)."""
        return self.learner.params


LAYOUT = OffPolicyState(
    learner=SEED,
    exploration=SHARD,
    buffer=SHARD,
    obs_stats=SEED,
    env_state=SHARD,
    obs=SHARD,
    first=SHARD,
    carry=SHARD,
    key=SHARD,
    env_params=ENV_PARAMS,
    env_steps=SHARED,
    updates=SHARED,
    stored=SHARED,
)
"""Where each part of :class:`OffPolicyState` lives (see :mod:`rollax.training`'s layouts)."""


def feedforward_explore(explore: Callable[..., tuple[jax.Array, Any]]) -> Callable[..., tuple]:
    """A feed-forward learner's ``explore`` in the driver's interface (with a carry).

    ``explore(learner, exploration, obs, key, env_steps) -> (action, exploration)`` becomes
    the driver's ``(learner, exploration, obs, carry, first, key, env_steps) -> (action,
    exploration, carry)``.
    """

    def with_carry(
        learner: Any, exploration: Any, obs: Any, carry: Any, first: jax.Array, key: PRNGKey,
        env_steps: jax.Array,
    ) -> tuple[jax.Array, Any, Any]:  # fmt: skip
        action, exploration = explore(learner, exploration, obs, key, env_steps)
        return action, exploration, carry

    return with_carry


def feedforward_act(act: Callable[..., jax.Array]) -> Callable[..., tuple]:
    """A feed-forward learner's ``act`` in the driver's interface (with a carry).

    ``act(learner, obs, key, deterministic) -> action`` becomes the driver's
    ``(learner, obs, carry, first, key, deterministic) -> (action, carry)``.
    """

    def with_carry(
        learner: Any, obs: Any, carry: Any, first: jax.Array, key: PRNGKey, deterministic: bool
    ) -> tuple[jax.Array, Any]:
        return act(learner, obs, key, deterministic), carry

    return with_carry


def checkpoint_hooks(
    config: Any,
    buffer: SequenceBuffer,
    obs_spec: Any,
    env: VecEnv,
    initial_carry: Callable[[int], Any] = no_carry,
) -> tuple[Any, Any]:
    """``(to_checkpoint, from_checkpoint)`` for :func:`rollax.training.build_agent`.

    With ``config.checkpoint_buffer`` the whole state is kept. Without it, checkpoints leave
    the replay buffer out and a restored state starts from empty buffers: learning pauses
    until ``learning_starts`` transitions are stored again, and the run is not bit-identical
    to one that never stopped.
    """
    if config.checkpoint_buffer:
        return None, None

    def to_checkpoint(state: OffPolicyState) -> OffPolicyState:
        return state.replace(buffer=None)

    def from_checkpoint(saved: OffPolicyState) -> OffPolicyState:
        example = transition_example(obs_spec, env, initial_carry)
        empty = jax.tree.map(
            lambda x: jnp.broadcast_to(x, (config.num_members, config.num_shards, *x.shape)),
            buffer.init(example),
        )
        return saved.replace(buffer=empty, stored=jnp.zeros((), jnp.int32))

    return to_checkpoint, from_checkpoint


def init_offpolicy_state(
    start: ShardStart,
    learner: Any,
    exploration: Any,
    buffer: SequenceBuffer,
    obs_spec: Any,
    env: VecEnv,
    initial_carry: Callable[[int], Any] = no_carry,
) -> OffPolicyState:
    """A fresh state of one seed's shard: its reset environments, an empty buffer.

    Args:
        start: The shard's start (from the training layer).
        learner: The seed's new learner.
        exploration: The shard's exploration state (``None`` for none).
        buffer: The shard's replay buffer.
        obs_spec: One observation's spec (vector or dict).
        env: The shard's batch.
        initial_carry: ``batch -> carry`` of a recurrent learner at an episode's start.
    """
    num_envs = env.num_envs
    return OffPolicyState(
        learner=learner,
        exploration=exploration,
        buffer=buffer.init(transition_example(obs_spec, env, initial_carry)),
        obs_stats=observation_stats(obs_spec),
        env_state=start.env_state,
        obs=start.obs,
        first=jnp.ones((num_envs,), bool),
        carry=initial_carry(num_envs),
        key=start.key,
        env_params=start.env_params,
        env_steps=jnp.zeros((), jnp.int32),
        updates=jnp.zeros((), jnp.int32),
        stored=jnp.zeros((), jnp.int32),
    )


@dataclasses.dataclass(frozen=True, eq=False)
class OffPolicyDriver:
    """What an off-policy agent's pieces close over: its static parts, for one seed on one shard.

    :func:`act_and_store`, :func:`learn_from_replay` and :func:`iteration` take it first;
    each can be called (and jitted) on its own with a one-seed, one-shard
    :class:`OffPolicyState` (no seed or shard axis).

    Attributes:
        config: The agent's configuration, with the fields every off-policy config has:
            ``num_envs``, ``num_shards``, ``train_every`` (vectorized steps per iteration,
            before its learning phase), ``gradient_steps`` (in each learning phase),
            ``batch_size`` (windows per gradient step, split over the shards),
            ``learning_starts`` (transitions per seed stored before learning begins),
            ``buffer_size`` and ``normalize_obs`` (normalize vector observations with
            running statistics updated from every collected observation; the buffer keeps
            raw observations).
        env: One shard's batch.
        buffer: The shard's replay (``replay_buffer(config)``).
        learner: The algorithm's own part (:class:`OffPolicyLearner`): its ``act``,
            ``learn``, ``metric_names`` and ``importance_exponent``.
        gradient_step: The layer's gradient step (:func:`rollax.training.gradient_step_for`),
            whose mean over the seed's shards observation statistics share (the learner's
            ``learn`` takes its own steps with it).
    """

    config: Any
    env: VecEnv
    buffer: SequenceBuffer
    learner: OffPolicyLearner
    gradient_step: GradientStep = dataclasses.field(default_factory=GradientStep)

    def observe(self, stats: Any, obs: Any) -> Any:
        """Observations as the learner sees them (normalized where the config says)."""
        return normalize_observation(stats, obs) if self.config.normalize_obs else obs


def explore(driver: OffPolicyDriver, state: OffPolicyState) -> tuple[jax.Array, Any, Any, PRNGKey]:
    """The learner's actions for the shard's observations, before the environments step.

    Returns ``(action, exploration, carry, key)``: the actions ``(E, ...)``, the exploration
    state and carry after them, and the state's next key (the state itself is unchanged:
    :func:`store` records the transition from the observations, ``first`` and carry that
    met them).
    """
    key, act_key = jax.random.split(state.key)
    seen = driver.observe(state.obs_stats, state.obs)
    action, exploration, carry = driver.learner.explore(
        state.learner, state.exploration, seen, state.carry, state.first, act_key, state.env_steps
    )
    return action, exploration, carry, key


def store(
    driver: OffPolicyDriver, state: OffPolicyState, action: jax.Array, exploration: Any,
    carry: Any, key: PRNGKey, ts: Any, env_state: Any,
) -> tuple[OffPolicyState, tuple[jax.Array, jax.Array]]:  # fmt: skip
    """What follows the environments' step: the transitions stored, the state advanced.

    :func:`stored_transition` added to the replay, and :func:`advance`.

    Args:
        driver: The agent's driver.
        state: The state :func:`explore` acted in.
        action: The actions :func:`explore` chose, ``(E, ...)``.
        exploration: The exploration state after them.
        carry: The learner's carry after them.
        key: The state's next key.
        ts: The environments' same-step :class:`~rollax.types.TimeStep` (``final_obs`` the
            true successor; ``info["episode_return"]`` each episode's return so far).
        env_state: The environments after the step (``()`` where the host holds them).

    Returns:
        The state and the step's ended episodes and the sum of their returns.
    """
    transition = stored_transition(state, action, carry, ts)
    state, episodes = advance(driver, state, action, exploration, carry, key, ts, env_state)
    return state.replace(buffer=driver.buffer.add(state.buffer, transition)), episodes


def stored_transition(state: OffPolicyState, action: jax.Array, carry: Any, ts: Any) -> Transition:
    """The replay's :class:`~rollax.buffers.Transition` of one step from ``state``.

    ``carry`` is the carry after the step: a recurrent learner (one with a carry) replays
    from the carry that met the observation, so ``first`` and the state's carry are kept.
    """
    memory = {"first": state.first, "carry": state.carry} if jax.tree.leaves(carry) else {}
    return Transition(
        obs=state.obs,
        action=action,
        reward=ts.reward,
        terminated=ts.terminated,
        truncated=ts.truncated,
        next_obs=ts.final_obs,
        **memory,
    )


def advance(
    driver: OffPolicyDriver, state: OffPolicyState, action: jax.Array, exploration: Any,
    carry: Any, key: PRNGKey, ts: Any, env_state: Any,
) -> tuple[OffPolicyState, tuple[jax.Array, jax.Array]]:  # fmt: skip
    """All that :func:`store` changes but the replay: observations, statistics, counters.

    What acting apart from the learner keeps (arguments as :func:`store`'s): the replay is
    the learner's, and :data:`ADVANCED` names the fields this changes.
    """
    del action
    config = driver.config
    stats = state.obs_stats
    if config.normalize_obs:
        step = driver.gradient_step
        stats = update_observation_stats(stats, state.obs, step.shard_mean, step.num_shards)
    done = ts.terminated | ts.truncated
    episodes = (
        done.sum(dtype=jnp.int32),
        jnp.where(done, ts.info["episode_return"], 0.0).sum(),
    )
    state = state.replace(
        exploration=exploration,
        obs_stats=stats,
        env_state=env_state,
        obs=ts.obs,
        first=done,
        carry=carry,
        key=key,
        env_steps=state.env_steps + config.num_envs,
    )
    return state, episodes


ADVANCED = ("exploration", "obs_stats", "env_state", "obs", "first", "carry", "key", "env_steps")
"""The fields of :class:`OffPolicyState` that :func:`advance` changes."""


def act_and_store(
    driver: OffPolicyDriver, state: OffPolicyState
) -> tuple[OffPolicyState, tuple[jax.Array, jax.Array]]:
    """One vectorized step: act with the learner's ``explore``, step, store the transitions.

    :func:`explore`, the environments' step and :func:`store`. Returns the state and the
    step's ended episodes and the sum of their returns.
    """
    env = driver.env
    action, exploration, carry, key = explore(driver, state)
    env_state, ts = env.step(
        state.env_state, action.astype(env.action_space.dtype), state.env_params
    )
    return store(driver, state, action, exploration, carry, key, ts, env_state)


def learn_from_replay(
    driver: OffPolicyDriver, state: OffPolicyState, drawn: Any = None
) -> tuple[Any, BufferState, PRNGKey, dict[str, jax.Array]]:
    """``gradient_steps`` steps of the learner's ``learn``, each on a sample of the replay.

    ``drawn``: the steps' samples drawn beforehand (:func:`draw_samples`, for a replay that
    sampling leaves unchanged); ``None``: each step samples the state's replay.

    Returns the learner, the replay (its priorities updated where prioritized; the state's
    own where ``drawn`` is given), the state's next key and the mean of each metric over the
    steps.
    """
    config, buffer, learner = driver.config, driver.buffer, driver.learner
    key, learn_key = jax.random.split(state.key)

    def gradient_step(carry: tuple, xs: tuple) -> tuple:
        seed_learner, replay = carry
        key, sample = xs
        k_sample, k_learn = jax.random.split(key)
        if sample is None:
            sample = _sample(driver, replay, seed_learner, k_sample)
        batch = sample.item.replace(
            obs=driver.observe(state.obs_stats, sample.item.obs),
            next_obs=driver.observe(state.obs_stats, sample.item.next_obs),
        )
        if buffer.prioritized:
            seed_learner, metrics, priority = learner.learn(
                seed_learner, batch, sample.weight, k_learn
            )
            replay = buffer.update_priorities(replay, sample.index, priority)
        else:
            seed_learner, metrics = learner.learn(seed_learner, batch, sample.weight, k_learn)
        return (seed_learner, replay), metrics

    replay = state.buffer if drawn is None else ()
    keys = jax.random.split(learn_key, config.gradient_steps)
    (seed_learner, replay), metrics = jax.lax.scan(
        gradient_step, (state.learner, replay), (keys, drawn)
    )
    replay = state.buffer if drawn is not None else replay
    return seed_learner, replay, key, jax.tree.map(lambda m: m.mean(axis=0), metrics)


def draw_samples(driver: OffPolicyDriver, state: OffPolicyState) -> Any:
    """What :func:`learn_from_replay`'s steps would sample, drawn at once.

    Leaves ``(gradient_steps, batch / shards, ...)``.

    The same keys, so the same samples, for a replay that sampling leaves unchanged (not
    prioritized, no importance exponent). Drawn outside the learning phase's branch, they
    keep the replay out of it: XLA would copy a replay that passes through a branch.
    """
    _, learn_key = jax.random.split(state.key)
    keys = jax.random.split(learn_key, driver.config.gradient_steps)
    return jax.lax.map(
        lambda k: _sample(driver, state.buffer, state.learner, jax.random.split(k)[0]), keys
    )


def _sample(driver: OffPolicyDriver, replay: BufferState, seed_learner: Any, key: PRNGKey) -> Any:
    """One gradient step's sample of ``replay``."""
    config, exponent = driver.config, driver.learner.importance_exponent
    beta = 1.0 if exponent is None else exponent(seed_learner)
    return driver.buffer.sample(replay, key, config.batch_size // config.num_shards, beta)


def iteration(
    driver: OffPolicyDriver, state: OffPolicyState
) -> tuple[OffPolicyState, dict[str, jax.Array]]:
    """``train_every`` steps of acting and storing, then a learning phase: the loop's step.

    The learning phase (:func:`learning_phase`) comes once the replay holds
    ``learning_starts`` transitions per seed.

    Metrics: this shard's ``episodes`` and ``return_sum``, the learner's means over the
    gradient steps (zeros while learning waits), and ``learned``.
    """
    state, (ended, returns) = jax.lax.scan(
        functools.partial(_act_and_store_step, driver), state, None, driver.config.train_every
    )
    return learning_phase(driver, state, ended.sum(dtype=jnp.int32), returns.sum())


def learning_phase(
    driver: OffPolicyDriver, state: OffPolicyState, episodes: jax.Array, return_sum: jax.Array
) -> tuple[OffPolicyState, dict[str, jax.Array]]:
    """What follows ``train_every`` stored steps, whoever stepped the environments.

    :func:`learn_from_replay` once the replay holds ``learning_starts`` transitions per seed.
    ``episodes`` (int32) and ``return_sum`` are the steps' ended episodes and their returns,
    passed on in the metrics (see :func:`iteration`).
    """
    config = driver.config
    # Transitions stored per seed (the same for every seed and shard, so the branch is
    # taken or skipped as a whole): a buffer left out of a checkpoint refills before
    # learning goes on.
    stored = jnp.minimum(state.stored + config.num_envs * config.train_every, config.buffer_size)
    learning = stored >= config.learning_starts

    # A replay that sampling leaves unchanged is sampled before the branch and kept out of
    # it: XLA copies whatever passes through a branch, a whole replay on every phase.
    apart = not driver.buffer.prioritized and driver.learner.importance_exponent is None
    drawn = draw_samples(driver, state) if apart else None
    operand = state.replace(buffer=()) if apart else state

    def skip(state: OffPolicyState) -> tuple:
        zeros = {name: jnp.zeros((), jnp.float32) for name in driver.learner.metric_names}
        return state.learner, state.buffer, state.key, zeros

    def learn(state: OffPolicyState) -> tuple:
        learner, replay, key, metrics = learn_from_replay(driver, state, drawn)
        return learner, () if apart else replay, key, metrics

    learner, replay, key, metrics = jax.lax.cond(learning, learn, skip, operand)
    replay = state.buffer if apart else replay
    state = state.replace(
        learner=learner,
        buffer=replay,
        key=key,
        stored=stored,
        updates=state.updates + jnp.where(learning, config.gradient_steps, 0).astype(jnp.int32),
    )
    return state, {
        "episodes": episodes,
        "return_sum": return_sum,
        "learned": learning,
        **metrics,
    }


def _act_and_store_step(driver: OffPolicyDriver, state: OffPolicyState, _: None) -> tuple:
    """:func:`act_and_store` as a ``jax.lax.scan`` body."""
    return act_and_store(driver, state)


def observe_for_policy(state: OffPolicyState, obs: Any, normalize: bool) -> Any:
    """One seed's observations ``(B, ...)`` as its learner sees them."""
    return normalize_observation(state.obs_stats, obs) if normalize else obs


@dataclasses.dataclass(frozen=True)
class OffPolicyLearner:
    """An off-policy algorithm's own part: its learner (one seed's) and how it acts.

    Attributes:
        obs_spec: One observation's shapes and dtypes.
        hyperparams: ``config -> hparams``: one seed's hyperparameters held as data, for a
            member's configuration (see :func:`rollax.training.build_agent`).
        init: ``(key, hparams) -> learner`` of one seed (``hparams`` float32 ``()`` leaves).
        explore: ``(learner, exploration, obs, carry, first, key, env_steps) -> (action,
            exploration, carry)``: the actions the run collects with. ``obs`` leaves ``(E,
            ...)`` (normalized if asked), ``first`` bool ``(E,)`` (the observation opens an
            episode), ``carry`` the learner's carry (``()`` for a feed-forward learner),
            ``env_steps`` int32 ``()``.
        learn: ``(learner, batch, weight, key) -> (learner, metrics)``, and with prioritized
            replay ``-> (learner, metrics, priority)``: ``batch`` a :class:`Transition` with
            leaves ``(batch_size / num_shards, replay_length, ...)`` (observations
            normalized if asked; with ``first`` and ``carry`` for a recurrent learner),
            ``weight`` float32 importance weights (ones without prioritized replay),
            ``metrics`` a dict of float32 scalars, ``priority`` float32 new priorities (asked
            for only when the replay is prioritized). Its gradient step averages over the
            shards.
        metric_names: ``learn``'s metrics.
        act: ``(learner, obs, carry, first, key, deterministic) -> (action, carry)`` of one
            seed for evaluation and video (``obs`` as the learner sees them, ``(B, ...)``;
            ``first`` and ``carry`` as in ``explore``), the greedy ones when
            ``deterministic``.
        with_budget: The resume hook for a new budget.
        init_exploration: ``(key, start) -> exploration`` of one shard (``None``: no exploration
            state): ``key`` the seed's learner key, ``start`` the shard's start.
        importance_exponent: ``learner -> beta`` for prioritized replay, else ``None``.
        initial_carry: ``batch -> carry``: a recurrent learner's carry of ``batch``
            environments at an episode's start (``no_carry`` for a feed-forward one).
    """

    obs_spec: Any
    hyperparams: Callable[[Any], Any]
    init: Callable[[PRNGKey, Any], Any]
    explore: Callable[..., tuple[jax.Array, Any, Any]]
    learn: Callable[..., tuple[Any, ...]]
    metric_names: Sequence[str]
    act: Callable[..., tuple[jax.Array, Any]]
    with_budget: Callable[[Any, int], Any]
    init_exploration: Callable[[PRNGKey, ShardStart], Any] | None = None
    importance_exponent: Callable[[Any], jax.Array] | None = None
    initial_carry: Callable[[int], Any] = no_carry


def build_offpolicy_agent(name: str, config: Any, env: VecEnv, learner: OffPolicyLearner) -> Agent:
    """An off-policy agent from its learner: what DQN, SAC and TD3 share.

    Args:
        name: The algorithm's registered name.
        config: Its configuration (the fields :class:`OffPolicyDriver` names).
        env: One shard's batch, or every member's environments on the host (a
            ``MemberEnvs``): its loop is then a Python loop around the host's step
            (rollax.training's host composition).
        learner: The algorithm's own part.
    """
    obs_spec, initial_carry = learner.obs_spec, learner.initial_carry
    init_exploration, init_learner = learner.init_exploration, learner.init
    buffer = replay_buffer(config)
    driver = OffPolicyDriver(config, env, buffer, learner, gradient_step_for(config))

    def init(key: PRNGKey, start: ShardStart, hparams: Any) -> OffPolicyState:
        exploration = None if init_exploration is None else init_exploration(key, start)
        seed_learner = init_learner(key, hparams)
        return init_offpolicy_state(
            start, seed_learner, exploration, buffer, obs_spec, env, initial_carry
        )

    def act_for_policy(
        state: OffPolicyState,
        obs: Any,
        carry: Any,
        first: jax.Array,
        key: PRNGKey,
        deterministic: bool,
    ) -> tuple[jax.Array, Any]:
        seen = observe_for_policy(state, obs, config.normalize_obs)
        return learner.act(state.learner, seen, carry, first, key, deterministic)

    to_checkpoint, from_checkpoint = checkpoint_hooks(config, buffer, obs_spec, env, initial_carry)
    pieces = AgentPieces(
        state_layout=LAYOUT,
        hyperparams=learner.hyperparams,
        init=init,
        iteration=functools.partial(iteration, driver),
        steps_per_iteration=config.steps_per_iteration,
        unit_name="vectorized steps of num_envs * train_every",
        metric_names=learner.metric_names,
        policy=Policy(init_carry=lambda state, batch: initial_carry(batch), act=act_for_policy),
        with_budget=learner.with_budget,
        to_checkpoint=to_checkpoint,
        from_checkpoint=from_checkpoint,
        driver=driver,
        # LLVM level 1 on the CPU: less compile work, as fast to run (Getting started).
        run_cpu_level=1,
    )
    if isinstance(env, MemberEnvs):  # environments that step on the host
        from rollax.agents._offpolicy_host import OffPolicyHostIteration

        loop = host_loop(name, config, env, pieces, initial_carry)
        return build_host_agent(name, loop, OffPolicyHostIteration(loop, driver))
    return build_agent(name, config, env, pieces)
