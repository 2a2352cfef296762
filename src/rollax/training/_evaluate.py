"""One evaluator for every agent: whole episodes with the state's params and episode limit.

Evaluation plays ``num_episodes`` episodes per seed in a batch of its own (the training
environments are untouched), without autoreset, until every episode has ended. The
environment params come from the training state, so a curriculum evaluates at its current
stage; the loop runs until the episodes end, so the episode limit is the state's
``max_episode_steps``, not the environment's default. Per-environment params (a leading
axis of ``num_seeds * num_envs``) are dealt to the evaluation episodes in turn: episode
``e`` of seed ``s`` runs with the params of that seed's training environment
``e % num_envs``.

The deterministic and the stochastic policy are one program: ``deterministic`` is data (a
boolean that chooses between the policy's mode and a sample at each step), so a run that
evaluates both compiles one evaluation, not two.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rollax.envs import EnvParams, VecEnv
from rollax.training._policy import Policy
from rollax.types import PRNGKey

__all__ = ["make_evaluator", "params_for_batch"]


def params_for_batch(
    params: EnvParams, default: EnvParams, num_train_envs: int, num_seeds: int, per_seed: int
) -> EnvParams:
    """Training params for a batch of ``num_seeds * per_seed`` other environments.

    Leaves shaped like ``default``'s are shared and pass as they are. Leaves with a leading
    axis of ``num_train_envs`` (one value per training environment, seeds' environments
    consecutive) are dealt out: environment ``e`` of seed ``s`` takes the value of training
    environment ``e % (num_train_envs // num_seeds)`` of seed ``s``.
    """
    envs_per_seed = num_train_envs // num_seeds
    index = (
        np.arange(num_seeds)[:, None] * envs_per_seed + np.arange(per_seed)[None, :] % envs_per_seed
    ).reshape(-1)

    def deal(leaf: Any, ref: Any) -> Any:
        if np.ndim(leaf) == np.ndim(ref):
            return leaf
        return jnp.asarray(leaf)[index]

    return jax.tree.map(deal, params, default)


def make_evaluator(
    env: VecEnv,
    policy: Policy,
    num_seeds: int,
    num_train_envs: int,
    out_sharding: jax.sharding.Sharding | None = None,
) -> tuple[Callable, Callable]:
    """The evaluation of ``policy`` on ``env``'s environment.

    Args:
        env: A training batch (its environment definition and id are used).
        policy: Every seed's policy (observations ``(num_seeds, B, ...)``).
        num_seeds: Seeds in the training state.
        num_train_envs: Training environments of all seeds (``num_seeds * num_envs``), the
            leading axis of per-environment params.
        out_sharding: Where the returns go (replicated, for every process of a
            multi-process run to read); ``None``: wherever XLA puts them.

    Returns:
        ``(evaluate, program)``: ``evaluate(state, key, num_episodes=64,
        deterministic=True)`` gives float32 ``(num_seeds, num_episodes)`` returns;
        ``program(num_episodes)`` the compiled function ``(state, key, deterministic) ->
        returns`` (``deterministic`` a bool array of shape ``()``; built on first use, for
        warming up), one for both policies.
    """
    from rollax._compile import FastCompile

    programs: dict[int, Any] = {}

    def program(num_episodes: int) -> Any:
        if isinstance(num_episodes, bool) or not isinstance(num_episodes, int) or num_episodes < 1:
            raise ValueError(f"num_episodes must be a positive integer, got {num_episodes!r}.")
        if num_episodes not in programs:
            episodes = _Episodes(env, policy, num_seeds, num_episodes, num_train_envs, out_sharding)
            programs[num_episodes] = FastCompile(episodes.run_episodes, cpu_level=1)
        return programs[num_episodes]

    def evaluate(
        state: Any, key: PRNGKey, num_episodes: int = 64, deterministic: bool = True
    ) -> jax.Array:
        """Returns of ``num_episodes`` whole episodes per seed: float32 ``(seeds, episodes)``.

        With the policy's mode (``deterministic``) or samples from it; the environment
        params and episode limit are the state's.
        """
        return program(num_episodes)(state, key, jnp.asarray(bool(deterministic)))

    return evaluate, program


@dataclasses.dataclass(frozen=True, eq=False)
class _Episodes:
    """One evaluation program: ``episodes`` whole episodes of every seed's policy.

    Attributes:
        train_env: The training batch (its environment definition, id and default params).
        policy: Every seed's policy.
        num_seeds: Seeds in the training state.
        episodes: Episodes per seed.
        num_train_envs: Training environments of all seeds.
        out_sharding: Where the returns go (``None``: wherever XLA puts them).
    """

    train_env: VecEnv
    policy: Policy
    num_seeds: int
    episodes: int
    num_train_envs: int
    out_sharding: jax.sharding.Sharding | None

    @functools.cached_property
    def env(self) -> VecEnv:
        """The evaluation batch: ``num_seeds * episodes`` environments without autoreset."""
        env, batch = self.train_env, self.num_seeds * self.episodes
        return VecEnv(env.env, batch, "disabled", "on_done", env.env_id)

    def per_seed(self, x: jax.Array) -> jax.Array:
        """``(num_seeds * episodes, ...)`` -> ``(num_seeds, episodes, ...)``."""
        return x.reshape(self.num_seeds, self.episodes, *x.shape[1:])

    def run_episodes(self, state: Any, key: PRNGKey, deterministic: jax.Array) -> jax.Array:
        """float32 ``(num_seeds, episodes)``: each episode's return, with the state's params.

        ``deterministic``: bool ``()``, the policy's mode (else samples from it).
        """
        default = self.train_env.default_params
        params = params_for_batch(
            state.env_params, default, self.num_train_envs, self.num_seeds, self.episodes
        )
        k_reset, k_act = jax.random.split(key)
        env_state, ts = self.env.reset(k_reset, params)
        # Every episode ends by its limit: the loop needs at most that many steps.
        limit = jnp.max(jnp.asarray(params.max_episode_steps))

        def running(carry: tuple) -> jax.Array:
            t, _, _, _, done, _ = carry
            return (t < limit) & ~jnp.all(done)

        zeros = jnp.zeros(self.num_seeds * self.episodes, jnp.float32)
        carry = (
            jnp.zeros((), jnp.int32),
            env_state,
            ts.obs,
            self.policy.init_carry(state, self.episodes),
            zeros.astype(jnp.bool_),
            zeros,
        )
        step = functools.partial(self.step, state, params, k_act, deterministic)
        total = jax.lax.while_loop(running, step, carry)[-1]
        total = total.reshape(self.num_seeds, self.episodes)
        if self.out_sharding is not None:
            total = jax.lax.with_sharding_constraint(total, self.out_sharding)
        return total

    def step(
        self, state: Any, params: Any, k_act: PRNGKey, deterministic: jax.Array, carry: tuple
    ) -> tuple:
        """One step of every evaluation episode; an ended episode's return stays as it is.

        The policy acts in both ways, its mode or a sample, chosen by ``deterministic``
        (a ``cond``: one of them runs).
        """
        t, env_state, obs, policy_carry, done, total = carry
        first = jnp.broadcast_to(t == 0, (self.num_seeds, self.episodes))
        inputs = (
            jax.tree.map(self.per_seed, obs),
            policy_carry,
            first,
            jax.random.fold_in(k_act, t),
        )
        action, policy_carry = jax.lax.cond(
            deterministic,
            lambda args: self.policy.act(state, *args, True),
            lambda args: self.policy.act(state, *args, False),
            inputs,
        )
        action = action.reshape(self.num_seeds * self.episodes, *action.shape[2:])
        env_state, ts = self.env.step(env_state, action.astype(self.env.action_space.dtype), params)
        total = total + jnp.where(done, 0.0, ts.reward)
        return t + 1, env_state, ts.obs, policy_carry, done | ts.done, total
