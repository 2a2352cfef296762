"""Evaluation on host environments: whole episodes of every member's policy, stepped with numpy.

The counterpart of :func:`~rollax.training.make_evaluator` for an agent whose environments
step on the host (:mod:`rollax.host`): a new batch of the same environments, each member's
policy acting on its share, until every environment has ended its first episode.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rollax.host import HostEnvError, host_seed
from rollax.training._policy import Policy
from rollax.types import PRNGKey

__all__ = ["MAX_EVALUATION_STEPS", "host_evaluator"]

MAX_EVALUATION_STEPS = 1_000_000
"""Steps after which an evaluation whose episodes have not all ended stops with an error (an
environment with no time limit)."""


def host_evaluator(
    remake: Callable[[int], Any] | None, name: str, policy: Policy, num_members: int
) -> Callable[..., jax.Array]:
    """``evaluate(state, key, num_episodes=64, deterministic=True)`` on host environments.

    Args:
        remake: ``n -> HostEnv``: ``n`` new environments; ``None`` where the run's
            environments cannot be made again (a built vector environment).
        name: The environments' name, for messages.
        policy: Every member's policy (observations ``(num_members, B, ...)``).
        num_members: Members in the state.

    Returns:
        ``evaluate``: float32 ``(num_members, num_episodes)`` returns, one episode of each of
        ``num_episodes`` new environments per member, seeded from ``key``.
    """
    act = jax.jit(policy.act, static_argnums=5)
    init_carry = jax.jit(policy.init_carry, static_argnums=1)

    def evaluate(
        state: Any, key: PRNGKey, num_episodes: int = 64, deterministic: bool = True
    ) -> jax.Array:
        if isinstance(num_episodes, bool) or not isinstance(num_episodes, int) or num_episodes < 1:
            raise ValueError(f"num_episodes must be a positive integer, got {num_episodes!r}.")
        if remake is None:
            raise ValueError(
                f"{name} was given as a built vector environment, which cannot be made again "
                "to evaluate on; give the environment by id, import path or function."
            )
        n = num_members * num_episodes
        env = remake(n)
        try:
            returns = _episodes(
                env, state, key, act, init_carry, num_members, num_episodes, bool(deterministic)
            )
            return jnp.asarray(returns)
        finally:
            env.close()

    return evaluate


def _episodes(
    env: Any, state: Any, key: PRNGKey, act: Callable[..., Any], init_carry: Callable[..., Any],
    members: int, episodes: int, deterministic: bool,
) -> np.ndarray:  # fmt: skip
    """Each environment's first episode's return, ``(members, episodes)``."""
    key, reset_key = jax.random.split(key)
    obs = env.reset(host_seed(reset_key))
    carry = init_carry(state, episodes)
    first = np.ones((members, episodes), bool)
    returns = np.full(members * episodes, np.nan, np.float32)
    for _ in range(MAX_EVALUATION_STEPS):
        key, step_key = jax.random.split(key)
        rows = jax.tree.map(lambda x: x.reshape(members, episodes, *x.shape[1:]), obs)
        action, carry = act(state, rows, carry, jnp.asarray(first), step_key, deterministic)
        action = np.asarray(action).reshape(members * episodes, *env.action_space.shape)
        ts = env.step(action)
        done = ts.terminated | ts.truncated
        ended = done & np.isnan(returns)
        returns[ended] = ts.info["episode_return"][ended]
        if not np.isnan(returns).any():
            return returns.reshape(members, episodes)
        obs, first = ts.obs, done.reshape(members, episodes)
    raise HostEnvError(
        f"{env.name}: evaluation played {MAX_EVALUATION_STEPS} steps and "
        f"{int(np.isnan(returns).sum())} episode(s) had not ended; give the environment a "
        "time limit (gymnasium.wrappers.TimeLimit)."
    )
