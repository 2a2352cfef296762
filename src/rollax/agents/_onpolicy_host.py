"""The on-policy iteration on host environments: the driver's own pieces around the host's step.

Each iteration is ``num_steps`` steps, each of them:

- :func:`~rollax.agents.onpolicy.policy_step` of every member, compiled (with the step's
  value);
- the :class:`~rollax.host.HostEnv`'s step, every member's environments at once;
- where an episode ended, :func:`~rollax.agents.onpolicy.final_value`, compiled;

then one compiled program stacks the steps, and does
:func:`~rollax.agents.onpolicy.bootstrap` and :func:`~rollax.agents.onpolicy.learn`, as the
iteration inside a program does after its rollout. The rollout acts with the state less its
optimizer's (its parameters, statistics, hyperparameters and counters); with ``acting_lag=1``
those trail the learner's by one update, and the batch is bootstrapped with the parameters
that collected it, so its values all come from one policy. The rest (members, starts, checkpoints,
evaluation) is the training layer's host composition (:mod:`rollax.training._host`).
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
    learn,
    policy_step,
)
from rollax.training import SHARD, HostIteration, HostLoop, apart_from_acting
from rollax.types import PRNGKey

__all__ = ["OnPolicyHostIteration"]


class OnPolicyHostIteration(HostIteration):
    """A rollout of every member's host environments, then the update (module docstring).

    Args:
        loop: The host composition's loop.
        driver: One member's driver, built on the loop's ``MemberEnvs``.
    """

    def __init__(self, loop: HostLoop, driver: OnPolicyDriver) -> None:
        self.loop, self.driver = loop, driver
        layout = loop.state_layout
        self._act = loop.mapped(self._policy, (layout, SHARD, SHARD, SHARD, SHARD), SHARD)
        self._final = loop.mapped(
            functools.partial(final_value, driver), (layout, SHARD, SHARD, SHARD), SHARD
        )
        self._finish = loop.mapped(self._learn, (layout, layout, SHARD, SHARD), (layout, SHARD))
        self._bootstrapped = loop.mapped(self._bootstrap, (layout, SHARD), SHARD)
        self._lagged = loop.config.acting_lag > 0

    # One member's programs.

    def _policy(self, state: OnPolicyState, obs: Any, first: jax.Array, carry: Any, key: PRNGKey):
        key, carry, action, extras, outputs = policy_step(
            self.driver, state, obs, first, carry, key
        )
        return key, carry, action, extras, self.driver.learner.value(outputs)

    def _bootstrap(self, acted: OnPolicyState, steps: tuple[Rollout, ...]) -> Rollout:
        records = jax.tree.map(lambda *xs: jnp.stack(xs), *steps)
        return bootstrap(self.driver, acted, records, acted.obs, acted.carry, acted.first)

    def _learn(
        self, state: OnPolicyState, acted: OnPolicyState, steps: tuple[Rollout, ...], totals: dict
    ) -> tuple:  # fmt: skip
        data = self._bootstrap(acted.replace(obs=state.obs, carry=state.carry, first=state.first),
                               steps)  # fmt: skip
        learned = functools.partial(learn, self.driver, data=data)
        state, metrics = apart_from_acting(learned, state) if self._lagged else learned(state)
        added = {**metrics, "learned": jnp.ones((), jnp.float32)}
        return state, jax.tree.map(jnp.add, totals, added)

    # Every member's steps.

    def acting_state(self, state: OnPolicyState) -> OnPolicyState:
        """``state`` without the optimizer's state."""
        return state.replace(opt_state=())

    def advanced(self, acting: OnPolicyState) -> dict:
        """The observations, ``first``, carry and key a rollout advances."""
        return {"obs": acting.obs, "first": acting.first, "carry": acting.carry, "key": acting.key}

    def rollout(self, state: OnPolicyState) -> tuple[OnPolicyState, tuple[Rollout, ...]]:
        """``num_steps`` steps of every member's host environments, not yet bootstrapped.

        Returns the state with its observations, carry and key advanced, and each step's
        :class:`Rollout` (leaves ``(members, 1, E, ...)``), stacked by the programs that
        take them.
        """
        host, rows = self.loop.envs.host, self.loop.rows
        obs, first, carry, key = state.obs, state.first, state.carry, state.key
        zeros = np.zeros(first.shape, np.float32)
        records = []
        for _ in range(self.driver.config.num_steps):
            carry_before = carry
            key, carry, action, extras, value = self._act(state, obs, first, carry, key)
            ts = host.step(np.asarray(action).reshape(host.num_envs, *host.action_space.shape))
            done = ts.terminated | ts.truncated
            final = self._final(state, rows(ts.final_obs), carry, first) if done.any() else zeros
            ended = np.where(done, ts.info["episode_return"], np.nan).astype(np.float32)
            records.append(
                Rollout(
                    obs=obs,
                    first=first,
                    action=action,
                    value=value,
                    reward=rows(ts.reward),
                    terminated=rows(ts.terminated),
                    truncated=rows(ts.truncated),
                    next_value=final,
                    episode_return=rows(ended),
                    carry=carry_before if self.driver.recurrent else (),
                    extras=extras,
                )
            )
            obs, first = jax.tree.map(jnp.asarray, rows(ts.obs)), jnp.asarray(rows(done))
        return state.replace(obs=obs, first=first, carry=carry, key=key), tuple(records)

    def update(
        self, state: OnPolicyState, acted: OnPolicyState, batch: tuple, totals: dict
    ) -> tuple[OnPolicyState, dict]:  # fmt: skip
        """The rollout bootstrapped with the parameters that acted, and the update from it."""
        return self._finish(state, acted, batch, totals)

    def collect(self, state: OnPolicyState) -> tuple[OnPolicyState, Rollout]:
        """One rollout without an update: leaves ``(num_steps, members * num_envs, ...)``."""
        end, steps = self.rollout(self.acting_state(state))
        state = state.replace(**self.advanced(end))
        records = self._bootstrapped(state, steps)
        t = self.driver.config.num_steps
        return state, jax.tree.map(
            lambda x: jnp.moveaxis(x, 2, 0).reshape(t, -1, *x.shape[4:]), records
        )

    def compile_jobs(self, state: OnPolicyState, totals: dict) -> list:
        """The policy step, the final value and the update, for a state of these shapes."""
        acting = self.acting_state(state)
        act_args = (acting, state.obs, state.first, state.carry, state.key)
        act_out = jax.eval_shape(self._act, *act_args)
        steps = jax.eval_shape(functools.partial(self._steps_like, act_out), state)
        return [
            lambda: self._act.lower(*act_args).compile(),
            lambda: self._final.lower(acting, state.obs, act_out[1], state.first).compile(),
            lambda: self._finish.lower(state, acting, steps, totals).compile(),
        ]

    def _steps_like(self, act_out: tuple, state: OnPolicyState) -> tuple[Rollout, ...]:
        """Steps of the shapes and dtypes :meth:`rollout` gives (for compiling ahead)."""
        _, _, action, extras, value = act_out
        flag = jnp.zeros(state.first.shape, jnp.bool_)
        zeros = jnp.zeros(value.shape, jnp.float32)
        one = Rollout(
            obs=state.obs,
            first=state.first,
            action=jnp.zeros(action.shape, action.dtype),
            value=jnp.zeros(value.shape, value.dtype),
            reward=zeros,
            terminated=flag,
            truncated=flag,
            next_value=zeros,
            episode_return=zeros,
            carry=state.carry if self.driver.recurrent else (),
            extras=jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), extras),
        )
        return (one,) * self.driver.config.num_steps
