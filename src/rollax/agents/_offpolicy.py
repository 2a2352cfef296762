"""What off-policy agents share: acting into a replay buffer, and learning from it.

An off-policy agent (DQN, SAC) provides a *learner*: its networks, target networks,
optimizers and hyperparameters, with two pure functions, ``act`` (exploration) and
``learn`` (one gradient step on a sampled batch). This module supplies the rest:

- :class:`OffPolicyState`: the learner with the replay buffer, observation statistics,
  environments, keys and counters, per seed.
- :func:`make_offpolicy_iteration`: one iteration steps every environment
  ``train_every`` times with the learner's ``act``, stores each transition with its true
  successor (``final_obs`` at an episode end), and then, once ``learning_starts``
  transitions per seed are stored, takes ``gradient_steps`` gradient steps, each on a batch
  of windows of ``n_step`` consecutive transitions (priorities updated when prioritized).

All seeds' environments step as one batch; buffers, learners and statistics are ``vmap``ped
over seeds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp

from rollax._struct import pytree_dataclass
from rollax.buffers import BufferState, SequenceBuffer, Transition
from rollax.envs import EnvParams, EnvState, VecEnv
from rollax.ops import normalize_observation, observation_stats, update_observation_stats
from rollax.types import PRNGKey

__all__ = [
    "OffPolicyState",
    "checkpoint_hooks",
    "empty_buffers",
    "init_offpolicy_state",
    "make_offpolicy_iteration",
    "observe_seeds",
    "replay_buffer",
]


@pytree_dataclass
class OffPolicyState:
    """Everything an off-policy run needs to continue.

    Save it, restore it, and training goes on as if it had never stopped (the replay
    buffer included). Per-seed leaves have a leading ``(num_seeds,)`` axis.

    Attributes:
        learner: The agent's learner state (networks, targets, optimizers, hyperparameters),
            per seed.
        buffer: Replay of each seed's transitions (a :class:`~rollax.buffers.BufferState`).
        obs_stats: Running observation statistics, per seed (used with ``normalize_obs``).
        env_state: The environments of all seeds as one batch of ``num_seeds * num_envs``.
        obs: Their current observations, leaves ``(num_seeds * num_envs, ...)``.
        key: One key per seed for exploration and sampling.
        env_params: The environment's params (a curriculum may change them between runs).
        env_steps: int32 ``()``: environment steps (transitions) per seed so far.
        updates: int32 ``()``: gradient steps per seed so far.
    """

    learner: Any
    buffer: BufferState
    obs_stats: Any
    env_state: EnvState
    obs: Any
    key: PRNGKey
    env_params: EnvParams
    env_steps: jax.Array
    updates: jax.Array

    @property
    def params(self) -> Any:
        """The learner's trained parameters (what the NaN guard checks)."""
        return self.learner.params


def transition_example(obs_spec: Any, env: VecEnv) -> Transition:
    """One environment's :class:`Transition` of zeros, to shape the replay buffer."""
    obs = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), obs_spec)
    space = env.action_space
    return Transition(
        obs=obs,
        action=jnp.zeros(space.shape, space.dtype),
        reward=jnp.zeros((), jnp.float32),
        terminated=jnp.zeros((), bool),
        truncated=jnp.zeros((), bool),
        next_obs=obs,
    )


def empty_buffers(
    buffer: SequenceBuffer, obs_spec: Any, env: VecEnv, num_seeds: int
) -> BufferState:
    """Every seed's replay, empty (leaves with a leading ``(num_seeds,)`` axis)."""
    example = transition_example(obs_spec, env)
    return jax.vmap(lambda _: buffer.init(example))(jnp.arange(num_seeds))


def checkpoint_hooks(
    config: Any, buffer: SequenceBuffer, obs_spec: Any, env: VecEnv
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
        return saved.replace(buffer=empty_buffers(buffer, obs_spec, env, config.num_seeds))

    return to_checkpoint, from_checkpoint


def init_offpolicy_state(
    *,
    key: PRNGKey,
    env: VecEnv,
    env_params: EnvParams | None,
    buffer: SequenceBuffer,
    obs_spec: Any,
    num_seeds: int,
    init_learner: Callable[[PRNGKey], Any],
) -> OffPolicyState:
    """A fresh state: reset environments, empty buffers, one learner per seed.

    Args:
        key: The run's initialization key.
        env: The training batch (``num_seeds * num_envs`` environments).
        env_params: Its params (``None``: the defaults).
        buffer: Each seed's replay buffer.
        obs_spec: One observation's spec (vector or dict).
        num_seeds: Seeds trained at once.
        init_learner: ``key -> learner`` of one seed.
    """
    env_params = env.default_params if env_params is None else env_params
    k_env, k_seeds = jax.random.split(key)
    env_state, ts = env.reset(k_env, env_params)

    def one_seed(key: PRNGKey) -> tuple:
        k_learner, key = jax.random.split(key)
        return init_learner(k_learner), key

    learner, keys = jax.vmap(one_seed)(jax.random.split(k_seeds, num_seeds))
    return OffPolicyState(
        learner=learner,
        buffer=empty_buffers(buffer, obs_spec, env, num_seeds),
        obs_stats=jax.vmap(lambda _: observation_stats(obs_spec))(jnp.arange(num_seeds)),
        env_state=env_state,
        obs=ts.obs,
        key=keys,
        env_params=jax.tree.map(jnp.asarray, env_params),
        env_steps=jnp.zeros((), jnp.int32),
        updates=jnp.zeros((), jnp.int32),
    )


def replay_buffer(config: Any) -> SequenceBuffer:
    """Each seed's replay buffer, sized by an off-policy config.

    ``buffer_size`` transitions from ``num_envs`` environments, sampled as windows of
    ``n_step`` transitions (prioritized when the config has ``prioritized``, storing each
    observation once with ``compact_replay``).
    """
    return SequenceBuffer(
        capacity=config.buffer_size,
        num_envs=config.num_envs,
        sequence_length=config.n_step,
        prioritized=getattr(config, "prioritized", False),
        priority_exponent=getattr(config, "priority_exponent", 0.6),
        compact=config.compact_replay,
    )


def observe_seeds(state: OffPolicyState, obs: Any, normalize: bool) -> Any:
    """Observations ``(num_seeds, B, ...)`` as each seed's learner sees them."""
    if not normalize:
        return obs
    return jax.vmap(normalize_observation)(state.obs_stats, obs)


def make_offpolicy_iteration(
    config: Any,
    env: VecEnv,
    buffer: SequenceBuffer,
    act: Callable[..., jax.Array],
    learn: Callable[..., tuple[Any, dict[str, jax.Array], jax.Array]],
    metric_names: Sequence[str],
    importance_exponent: Callable[[Any], jax.Array] | None = None,
) -> Callable[[OffPolicyState], tuple[OffPolicyState, dict[str, jax.Array]]]:
    """One iteration of an off-policy agent, for :func:`rollax.training.build_agent`.

    Args:
        config: The agent's configuration, with the fields every off-policy config has:
            ``num_seeds``, ``num_envs``, ``train_every`` (vectorized steps per iteration,
            before its learning phase), ``gradient_steps`` (in each learning phase),
            ``batch_size`` (windows per gradient step), ``learning_starts`` (transitions
            per seed stored before learning begins) and ``normalize_obs`` (normalize vector
            observations with running statistics updated from every collected observation;
            the buffer keeps raw observations).
        env: The training batch.
        buffer: Each seed's replay (:func:`replay_buffer`).
        act: ``(learner, obs, key, env_steps) -> (action, learner)`` for one seed: ``obs``
            leaves ``(num_envs, ...)`` (normalized if asked), ``env_steps`` int32 ``()``; the
            learner returned may carry exploration state (SAC's correlated noise).
        learn: ``(learner, batch, weight, key) -> (learner, metrics, priority)`` for one
            seed: ``batch`` a :class:`Transition` with leaves ``(batch_size, n_step, ...)``
            (observations normalized if asked), ``weight`` float32 ``(batch_size,)``
            importance weights (ones without prioritized replay), ``metrics`` a dict of
            float32 scalars, ``priority`` float32 ``(batch_size,)`` new priorities.
        metric_names: The names of ``learn``'s metrics (zeros while learning waits).
        importance_exponent: ``learner -> beta`` for prioritized sampling (its
            hyperparameter); ``None`` for uniform replay.

    Returns:
        ``iteration(state) -> (state, metrics)``: metrics per seed ``(num_seeds,)``:
        ``episodes``, ``return_sum``, the learner's means over the gradient steps, and
        ``learned`` (whether the learning phase ran).
    """
    num_seeds, num_envs = config.num_seeds, config.num_envs
    train_every, gradient_steps = config.train_every, config.gradient_steps
    batch_size, learning_starts = config.batch_size, config.learning_starts
    normalize_obs = config.normalize_obs

    def per_seed(x: jax.Array) -> jax.Array:
        return x.reshape(num_seeds, num_envs, *x.shape[1:])

    def flat(x: jax.Array) -> jax.Array:
        return x.reshape(num_seeds * num_envs, *x.shape[2:])

    def observe(stats: Any, obs: Any) -> Any:
        return normalize_observation(stats, obs) if normalize_obs else obs

    def env_step(state: OffPolicyState, _: None) -> tuple[OffPolicyState, tuple]:
        keys, act_keys = jax.vmap(jax.random.split, out_axes=1)(state.key)
        obs = jax.tree.map(per_seed, state.obs)
        seen = jax.vmap(observe)(state.obs_stats, obs)
        action, learner = jax.vmap(act, in_axes=(0, 0, 0, None))(
            state.learner, seen, act_keys, state.env_steps
        )
        env_state, ts = env.step(
            state.env_state, flat(action).astype(env.action_space.dtype), state.env_params
        )
        transition = Transition(
            obs=obs,
            action=action,
            reward=per_seed(ts.reward),
            terminated=per_seed(ts.terminated),
            truncated=per_seed(ts.truncated),
            next_obs=jax.tree.map(per_seed, ts.final_obs),
        )
        stats = state.obs_stats
        if normalize_obs:
            stats = jax.vmap(update_observation_stats)(stats, obs)
        done = per_seed(ts.done)
        episodes = (
            done.sum(axis=1),
            jnp.where(done, per_seed(ts.info["episode_return"]), 0.0).sum(axis=1),
        )
        state = state.replace(
            learner=learner,
            buffer=jax.vmap(buffer.add)(state.buffer, transition),
            obs_stats=stats,
            env_state=env_state,
            obs=ts.obs,
            key=keys,
            env_steps=state.env_steps + num_envs,
        )
        return state, episodes

    def learning_phase(state: OffPolicyState) -> tuple[Any, BufferState, Any, dict]:
        keys, learn_keys = jax.vmap(jax.random.split, out_axes=1)(state.key)

        def gradient_step(carry: tuple, keys: PRNGKey) -> tuple:
            learner, replay = carry

            def one_seed(learner: Any, replay: BufferState, stats: Any, key: PRNGKey) -> tuple:
                k_sample, k_learn = jax.random.split(key)
                beta = 1.0 if importance_exponent is None else importance_exponent(learner)
                sample = buffer.sample(replay, k_sample, batch_size, beta)
                batch = sample.item.replace(
                    obs=observe(stats, sample.item.obs),
                    next_obs=observe(stats, sample.item.next_obs),
                )
                learner, metrics, priority = learn(learner, batch, sample.weight, k_learn)
                if buffer.prioritized:
                    replay = buffer.update_priorities(replay, sample.index, priority)
                return learner, replay, metrics

            learner, replay, metrics = jax.vmap(one_seed)(learner, replay, state.obs_stats, keys)
            return (learner, replay), metrics

        step_keys = jax.vmap(lambda k: jax.random.split(k, gradient_steps), out_axes=1)(learn_keys)
        (learner, replay), metrics = jax.lax.scan(
            gradient_step, (state.learner, state.buffer), step_keys
        )
        return learner, replay, keys, jax.tree.map(lambda m: m.mean(axis=0), metrics)

    def iteration(state: OffPolicyState) -> tuple[OffPolicyState, dict[str, jax.Array]]:
        state, (ended, returns) = jax.lax.scan(env_step, state, None, train_every)
        # Transitions stored (the same for every seed): a buffer left out of a checkpoint
        # refills before learning goes on.
        learning = buffer.size(jax.tree.map(lambda x: x[0], state.buffer)) >= learning_starts

        def skip(state: OffPolicyState) -> tuple:
            zeros = {name: jnp.zeros((num_seeds,), jnp.float32) for name in metric_names}
            return state.learner, state.buffer, state.key, zeros

        learner, replay, keys, metrics = jax.lax.cond(learning, learning_phase, skip, state)
        state = state.replace(
            learner=learner,
            buffer=replay,
            key=keys,
            updates=state.updates + jnp.where(learning, gradient_steps, 0).astype(jnp.int32),
        )
        return state, {
            "episodes": ended.sum(axis=0).astype(jnp.int32),
            "return_sum": returns.sum(axis=0),
            "learned": jnp.broadcast_to(learning, (num_seeds,)),
            **metrics,
        }

    return iteration
