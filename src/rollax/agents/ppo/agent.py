"""PPO as pieces for the shared training layer: ``make_ppo(config, env) -> Agent``.

``agent = make_ppo(config, "CartPole-v1")``, then ``state = agent.init(key)`` builds the
whole training state and ``state, metrics = agent.run(state, num_steps)`` trains for exactly
``num_steps`` environment steps per seed, any number of times, without compiling again. One
iteration is a rollout of ``num_steps`` steps in ``num_envs`` environments per seed and an
update over it.

Everything here is written for one seed on one shard of its environments (``num_envs //
num_shards`` of them): the training layer maps it over seeds and shards and places it on
devices. A shard shuffles its own minibatches; the gradient of each minibatch is averaged
over the seed's shards in the layer's one gradient step.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from rollax._struct import pytree_dataclass
from rollax.agents.ppo.config import PPOConfig
from rollax.agents.ppo.losses import ppo_loss
from rollax.agents.ppo.minibatches import (
    Sequences,
    replay,
    rollout_sequences,
    shuffled_samples,
    shuffled_sequences,
)
from rollax.agents.ppo.network import PolicyNetwork, network_for
from rollax.envs import EnvParams, EnvState, VecEnv
from rollax.envs._resets import at_most_once
from rollax.ops import (
    gae,
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
    GradientStep,
    Optimizer,
    OptimizerHyperParams,
    Policy,
    ShardStart,
    build_agent,
    layout_for,
    optimizer_values,
    stretch_schedule,
    training_env,
)
from rollax.types import PRNGKey

__all__ = ["PPO", "PPOHyperParams", "PPOState", "Rollout", "make_ppo"]


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
        **optimizer_values(config, config.total_steps // config.batch_size),
        gamma=config.gamma,
        gae_lambda=config.gae_lambda,
        clip_eps=config.clip_eps,
        ent_coef=config.ent_coef,
        vf_coef=config.vf_coef,
        reward_scale=config.reward_scale,
    )


@pytree_dataclass
class PPOState:
    """Everything a PPO run needs to continue.

    Save it, restore it, and training goes on as if it had never stopped. Leaves as the
    training layer holds them (``LAYOUT``): per-seed leaves lead with ``(num_seeds,)``,
    per-shard leaves with ``(num_seeds, num_shards)`` and then the shard's ``E = num_envs //
    num_shards`` environments.

    Attributes:
        params: Actor-critic parameters, per seed.
        opt_state: The optimizer's state (Adam's: ``optax.ScaleByAdamState``), per seed.
        obs_stats: Running observation statistics, per seed: a ``RunningStats``, or for dict
            observations a dict of them for the vector entries (images are only scaled).
        hparams: :class:`PPOHyperParams`, per seed.
        env_state: Each shard's environments, ``(E, ...)`` per shard.
        obs: Their current observations, ``(E, *obs_shape)`` per shard (for dict
            observations, every entry).
        first: bool ``(E,)`` per shard: the current observation opens an episode.
        carry: The network's carry for the current observations, per shard (``()`` for a
            feed-forward network).
        key: Each shard's key for sampling actions and minibatches.
        env_params: The environment's params (a curriculum may change them between runs):
            leaves as the defaults, or with a leading ``num_seeds * num_envs`` axis.
        env_steps: int32 ``()``, environment steps taken per seed.
        updates: int32 ``()``, updates done.
    """

    params: Any
    opt_state: Any
    obs_stats: Any
    hparams: PPOHyperParams
    env_state: EnvState
    obs: Any
    first: jax.Array
    carry: Any
    key: PRNGKey
    env_params: EnvParams
    env_steps: jax.Array
    updates: jax.Array


LAYOUT = PPOState(
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
"""Where each part of :class:`PPOState` lives (see :mod:`rollax.training`'s layouts)."""


@dataclasses.dataclass(frozen=True, eq=False)
class PPO(Agent):
    """PPO as an :class:`~rollax.training.Agent`, plus its rollout and network for inspection.

    Attributes:
        collect: ``state -> (state, rollout)``: one rollout without an update, a
            :class:`Rollout` with leaves ``(num_steps, num_seeds * num_envs, ...)`` (seed by
            seed, each seed's shards in order).
        network: The :class:`~rollax.agents.ppo.PolicyNetwork` every part of PPO
            calls.
    """

    collect: Any = None
    network: PolicyNetwork | None = None


class Rollout(NamedTuple):
    """One rollout step of every environment (leaves ``(N, ...)``, stacked to ``(T, N, ...)``).

    ``next_value`` is the value of the transition's true successor: the value of the next
    observation while the episode goes on, the value of ``final_obs`` where it ended (used
    only if truncated; terminated transitions do not bootstrap), computed with the carry of
    the episode that ended. ``first`` is the pre-step flag the network saw with ``obs``
    (the observation opens an episode), and ``carry`` the network's carry before the step
    (``()`` for a feed-forward network): the recurrent loss replays its sequences from them.
    """

    obs: jax.Array
    first: jax.Array
    action: jax.Array
    log_prob: jax.Array
    value: jax.Array
    reward: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    next_value: jax.Array
    episode_return: jax.Array
    carry: Any = ()


def make_ppo(
    config: PPOConfig,
    env: VecEnv | str,
    *,
    network: PolicyNetwork | None = None,
    **make_options: Any,
) -> PPO:
    """Build PPO for an environment.

    Args:
        config: The configuration; checked here, before anything compiles.
        env: A registered id (built with ``num_envs // num_shards`` environments and the
            config's ``frame_stack`` and ``action_repeat``) or a ``VecEnv`` of one shard's
            environments: exactly ``num_envs // num_shards``, wrapped as it should be.
        network: A :class:`PolicyNetwork` of your own instead of the one the configuration
            describes. A network whose carry has leaves is recurrent: the loss replays
            sequences (``chunk_length``, ``burn_in``).
        **make_options: Passed to :func:`rollax.make` when ``env`` is an id.

    Raises:
        ValueError: an inconsistent configuration, a ``VecEnv`` of the wrong size, or a
            device count the layout cannot use.
    """
    config.validate()
    layout = layout_for(config)
    env = training_env(
        "make_ppo",
        env,
        config.num_envs // config.num_shards,
        frame_stack=config.frame_stack,
        action_repeat=config.action_repeat,
        **make_options,
    )
    built, obs_spec = network_for(config, env)
    network = network or built
    recurrent = bool(jax.tree.leaves(jax.eval_shape(lambda: network.initial_carry(1))))
    chunk = config.chunk_length or config.num_steps
    burn_in = config.burn_in
    image_keys = tuple(
        k for k in (obs_spec if isinstance(obs_spec, dict) else {}) if is_image_key(k)
    )
    n, t = env.num_envs, config.num_steps  # one shard's environments, steps per rollout
    shard_batch = n * t
    augment = config.augment_pixels and bool(image_keys)
    step = GradientStep(mean=layout.mean)
    optimizer = Optimizer.of(config, eps=1e-5)

    def observe(stats: Any, obs: Any) -> Any:
        return normalize_observation(stats, obs) if config.normalize_obs else obs

    # ------------------------------------------------------------------ init

    def init(key: PRNGKey, start: ShardStart, hparams: PPOHyperParams) -> PPOState:
        example = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), obs_spec)
        params = network.init(key, example)
        return PPOState(
            params=params,
            opt_state=optimizer.init(params),
            obs_stats=observation_stats(obs_spec),
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

    # ------------------------------------------------------------------ rollout

    def rollout(state: PPOState) -> tuple[PPOState, Rollout]:
        """One shard's rollout: leaves ``(T, E, ...)``."""

        def step_env(carry: tuple, _: None) -> tuple:
            env_state, obs, first, net_carry, key = carry
            key, action_key = jax.random.split(key)
            seen = observe(state.obs_stats, obs)
            carry_before = net_carry
            net_carry, dist, value = network.apply(state.params, seen, net_carry, first)
            action, log_prob = dist.sample_and_log_prob(seed=action_key)
            env_state, ts = env.step(
                env_state, action.astype(env.action_space.dtype), state.env_params
            )
            # Values of final observations, needed only where an episode ended (elsewhere
            # the next step's value is the successor's), with the carry of the episode that
            # ended (the final observation continues it: no reset): computed only on steps
            # where one did.
            final_value = at_most_once(
                ts.done.any(),
                lambda _: network.apply(
                    state.params,
                    observe(state.obs_stats, ts.final_obs),
                    net_carry,
                    jnp.zeros_like(first),
                )[2],
                jnp.zeros(n, jnp.float32),
            )
            record = Rollout(
                obs=obs,
                first=first,
                action=action,
                log_prob=log_prob,
                value=value,
                reward=ts.reward,
                terminated=ts.terminated,
                truncated=ts.truncated,
                next_value=final_value,
                episode_return=jnp.where(ts.done, ts.info["episode_return"], jnp.nan),
                carry=carry_before if recurrent else (),
            )
            return (env_state, ts.obs, ts.done, net_carry, key), record

        start = (state.env_state, state.obs, state.first, state.carry, state.key)
        (env_state, obs, first, net_carry, key), records = jax.lax.scan(step_env, start, None, t)
        # The successor of step t is step t + 1's observation unless an episode ended there.
        last_value = network.apply(state.params, observe(state.obs_stats, obs), net_carry, first)[2]
        following = jnp.concatenate([records.value[1:], last_value[None]])
        done = records.terminated | records.truncated
        records = records._replace(next_value=jnp.where(done, records.next_value, following))
        state = state.replace(env_state=env_state, obs=obs, first=first, carry=net_carry, key=key)
        return state, records

    # ------------------------------------------------------------------ update

    def loss_fn(
        params: Any, hp: PPOHyperParams, stats: Any, mb: Sequences, key: PRNGKey | None
    ) -> tuple:
        _, _, action, old_log_prob, old_value, advantage, target = mb.steps
        shift = None  # augment_pixels: DrQ's random shift of every image
        if key is not None:
            shift = lambda obs: random_shift(key, obs, config.shift_pad)  # noqa: E731
        dist, value = replay(network, params, mb, lambda obs: observe(stats, obs), shift)
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

    def update(state: PPOState, data: Rollout, key: PRNGKey) -> tuple:
        """The seed's PPO update from this shard's rollout (leaves ``(T, E, ...)``)."""
        hp = state.hparams
        advantage, target = gae(
            data.reward * hp.reward_scale,
            data.value,
            data.next_value,
            data.terminated,
            data.truncated,
            hp.gamma,
            hp.gae_lambda,
        )
        steps = (data.obs, data.first, data.action, data.log_prob, data.value, advantage, target)
        if recurrent:  # sequences of chunk steps from their stored carries
            sequences = rollout_sequences(steps, data.obs, data.carry, data.first, chunk, burn_in)
            cut = lambda key: shuffled_sequences(key, sequences, config.num_minibatches)  # noqa: E731
        else:
            batch = jax.tree.map(lambda x: x.reshape(shard_batch, *x.shape[2:]), steps)
            cut = lambda key: Sequences(  # noqa: E731
                shuffled_samples(key, batch, config.num_minibatches), carry=()
            )
        transformation = optimizer.transformation(hp, state.updates)

        def epoch(carry: tuple, key: PRNGKey) -> tuple:
            if augment:
                key, aug_key = jax.random.split(key)
                aug_keys = jax.random.split(aug_key, config.num_minibatches)
            else:
                aug_keys = None
            minibatches = cut(key)

            def minibatch(carry: tuple, xs: tuple) -> tuple:
                params, opt_state = carry
                mb, aug = xs
                grads, aux = jax.grad(loss_fn, has_aux=True)(params, hp, state.obs_stats, mb, aug)
                params, opt_state = step(transformation, params, opt_state, grads)
                return (params, opt_state), aux

            return jax.lax.scan(minibatch, carry, (minibatches, aug_keys))

        (params, opt_state), aux = jax.lax.scan(
            epoch, (state.params, state.opt_state), jax.random.split(key, config.num_epochs)
        )
        return params, opt_state, jax.tree.map(jnp.mean, aux)

    def iteration(state: PPOState) -> tuple[PPOState, dict[str, jax.Array]]:
        state, data = rollout(state)
        key, update_key = jax.random.split(state.key)
        params, opt_state, (pl, vl, ent, kl) = update(state, data, update_key)
        stats = state.obs_stats
        if config.normalize_obs:
            stats = update_observation_stats(stats, data.obs, layout.shard_mean, layout.num_shards)
        finished = ~jnp.isnan(data.episode_return)
        metrics = {
            "episodes": finished.sum(dtype=jnp.int32),
            "return_sum": jnp.where(finished, data.episode_return, 0.0).sum(),
            "policy_loss": pl,
            "value_loss": vl,
            "entropy": ent,
            "approx_kl": kl,
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
        state: PPOState, obs: Any, carry: Any, first: jax.Array, key: PRNGKey, deterministic: bool
    ) -> tuple[jax.Array, Any]:
        """One seed's actions for observations ``(B, *obs_shape)``: the mode, or a sample."""
        carry, dist, _ = network.apply(state.params, observe(state.obs_stats, obs), carry, first)
        return (dist.mode() if deterministic else dist.sample(seed=key)), carry

    def with_budget(state: PPOState, total_steps: int) -> PPOState:
        """Stretch the learning-rate schedule to a new budget (members with a schedule)."""
        return state.replace(
            hparams=stretch_schedule(state.hparams, total_steps // config.batch_size)
        )

    agent = build_agent(
        name="ppo",
        config=config,
        layout=layout,
        env=env,
        state_layout=LAYOUT,
        hyperparams=hyperparams,
        init=init,
        iteration=iteration,
        steps_per_iteration=config.batch_size,
        unit_name="rollouts of num_envs * num_steps",
        metric_names=("policy_loss", "value_loss", "entropy", "approx_kl"),
        policy=Policy(init_carry=lambda state, batch: network.initial_carry(batch), act=act),
        with_budget=with_budget,
        # On the CPU, LLVM level 1 compiles PPO's training program with about 20% less work
        # (CartPole's preset: 4.4 CPU-s instead of 5.5; Breakout-MinAtar's: 6.6 instead of
        # 8.2) and runs it as fast (0.22 s and 1.7 CPU-s per measured call both ways).
        run_cpu_level=1,
    )

    def collect(state: PPOState) -> tuple[PPOState, Rollout]:
        """One rollout of every seed's shards, without an update."""
        view, tags = layout.env_params_view(state.env_params, env.default_params, config.num_envs)
        state_layout = LAYOUT.replace(env_params=tags)
        mapped = layout.map(rollout, (state_layout,), (state_layout, SHARD))
        new, records = mapped(state.replace(env_params=view))
        # (seeds, shards, T, E, ...) -> (T, seeds * num_envs, ...)
        records = jax.tree.map(
            lambda x: jnp.moveaxis(x, 2, 0).reshape(t, -1, *x.shape[4:]), records
        )
        return new.replace(env_params=state.env_params), records

    return PPO(**vars(agent), collect=jax.jit(collect), network=network)
