"""An on-policy rollout of host environments, made of the on-policy driver's own pieces.

Each step is the compiled :func:`~rollax.agents.onpolicy.policy_step` (with the step's
value), the environments' step on the host and, where an episode ended, the compiled
:func:`~rollax.agents.onpolicy.final_value`; :func:`~rollax.agents.onpolicy.bootstrap` then
fills in the successors' values, and :func:`~rollax.agents.onpolicy.learn` learns from the
:class:`~rollax.agents.onpolicy.Rollout` as from one collected inside the program.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rollax.agents._onpolicy import (
    OnPolicyDriver,
    OnPolicyState,
    Rollout,
    bootstrap,
    final_value,
    policy_step,
)
from rollax.host._env import HostEnv

__all__ = ["HostRollout"]


class HostRollout:
    """``num_steps`` steps of a :class:`HostEnv` with one seed's on-policy state.

    Args:
        driver: The agent's driver; its ``num_envs`` environments are the host's.
    """

    def __init__(self, driver: OnPolicyDriver) -> None:
        self.driver = driver
        self._act = jax.jit(self._policy)
        self._final = jax.jit(functools.partial(final_value, driver))
        self._bootstrap = jax.jit(functools.partial(bootstrap, driver))

    def _policy(self, state: OnPolicyState, obs: Any, first: jax.Array, carry: Any, key: Any):
        key, carry, action, extras, outputs = policy_step(self.driver, state, obs, first, carry,
                                                          key)  # fmt: skip
        return key, carry, action, extras, self.driver.learner.value(outputs)

    def collect(self, state: OnPolicyState, env: HostEnv) -> tuple[OnPolicyState, Rollout]:
        """One rollout of ``env``: the state advanced, and the :class:`Rollout`.

        The state's observations, carry and key are advanced; the rollout's leaves are
        ``(T, E, ...)``.
        """
        if env.num_envs != self.driver.env.num_envs:
            raise ValueError(
                f"HostRollout: the driver takes {self.driver.env.num_envs} environments, "
                f"{env.name} has {env.num_envs}."
            )
        recurrent = self.driver.recurrent
        zeros = np.zeros(env.num_envs, np.float32)
        obs, first, carry, key = state.obs, state.first, state.carry, state.key
        records = []
        for _ in range(self.driver.config.num_steps):
            carry_before = carry
            key, carry, action, extras, value = self._act(state, obs, first, carry, key)
            ts = env.step(np.asarray(action))
            done = ts.terminated | ts.truncated
            final = self._final(state, ts.final_obs, carry, first) if done.any() else zeros
            records.append(
                Rollout(
                    obs=obs,
                    first=first,
                    action=action,
                    value=value,
                    reward=ts.reward,
                    terminated=ts.terminated,
                    truncated=ts.truncated,
                    next_value=final,
                    episode_return=np.where(done, ts.info["episode_return"], np.nan).astype(
                        np.float32
                    ),
                    carry=carry_before if recurrent else (),
                    extras=extras,
                )
            )
            obs, first = ts.obs, done
        stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *records)
        stacked = self._bootstrap(state, stacked, obs, carry, first)
        state = state.replace(obs=jax.tree.map(jnp.asarray, obs), first=jnp.asarray(first),
                              carry=carry, key=key)  # fmt: skip
        return state, stacked
