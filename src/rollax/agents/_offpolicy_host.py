"""The off-policy iteration on host environments: the driver's own pieces around the host's step.

Each iteration is ``train_every`` steps, each of them :func:`~rollax.agents.offpolicy.explore`
of every member (compiled), the :class:`~rollax.host.HostEnv`'s step of every member's
environments at once, and :func:`~rollax.agents.offpolicy.advance` (compiled: the
observations, statistics and counters after the step); then one compiled program adds the
steps' transitions (:func:`~rollax.agents.offpolicy.stored_transition`) to each member's
replay and runs :func:`~rollax.agents.offpolicy.learning_phase`, as the iteration inside a
program does. Acting reads the state less its replay; with ``acting_lag=1`` its parameters
trail the learner's by one learning phase. The replay ratio is the configuration's, exactly:
``gradient_steps`` per ``train_every`` vectorized steps, and each learning phase follows the
same transitions whatever the lag. The rest (members, starts, checkpoints, evaluation) is the
training layer's host composition (:mod:`rollax.training._host`).
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rollax.agents._offpolicy import (
    ADVANCED,
    OffPolicyDriver,
    OffPolicyState,
    advance,
    explore,
    learning_phase,
    stored_transition,
)
from rollax.training import SHARD, HostIteration, HostLoop, apart_from_acting
from rollax.types import TimeStep

__all__ = ["OffPolicyHostIteration"]


class OffPolicyHostIteration(HostIteration):
    """``train_every`` steps of every member's host environments, then learning.

    Args:
        loop: The host composition's loop.
        driver: One member's driver, built on the loop's ``MemberEnvs``.
    """

    def __init__(self, loop: HostLoop, driver: OffPolicyDriver) -> None:
        self.loop, self.driver = loop, driver
        layout = loop.state_layout
        self._explore = loop.mapped(functools.partial(explore, driver), (layout,), SHARD)
        self._advance = loop.mapped(self._advanced, (layout, SHARD, SHARD, SHARD), (layout, SHARD))
        self._learn = loop.mapped(
            self._learned, (layout, layout.buffer, SHARD, SHARD), (layout, SHARD), donate=(1,)
        )
        self._lagged = loop.config.acting_lag > 0

    # One member's programs.

    def _advanced(self, state: OffPolicyState, acted: tuple, ts: TimeStep, sums: tuple) -> tuple:
        """The state after the step; ``sums`` of ended episodes and returns advanced."""
        action, exploration, carry, key = acted
        state, ended = advance(self.driver, state, action, exploration, carry, key, ts, ())
        return state, jax.tree.map(jnp.add, sums, ended)

    def _learned(self, state: OffPolicyState, buffer: Any, steps: tuple, totals: dict) -> tuple:
        """The steps' transitions stored, then the learning phase; its metrics in ``totals``.

        ``buffer`` is the state's replay, apart so that the program adds to it in place.
        """
        records, (episodes, return_sum) = steps
        for before, acted, ts in records:
            step_state = state.replace(**before)
            transition = stored_transition(step_state, acted[0], acted[2], ts)
            buffer = self.driver.buffer.add(buffer, transition)
        learn = functools.partial(
            learning_phase, self.driver, episodes=episodes, return_sum=return_sum
        )
        state = state.replace(buffer=buffer)
        state, metrics = apart_from_acting(learn, state) if self._lagged else learn(state)
        learned = metrics["learned"].astype(jnp.float32)
        added = {
            "episodes": metrics["episodes"],
            "return_sum": metrics["return_sum"],
            "learned": learned,
            **{
                k: jnp.where(learned > 0, metrics[k], 0.0) for k in self.driver.learner.metric_names
            },
        }
        return state, jax.tree.map(jnp.add, totals, added)

    # Every member's steps.

    def acting_state(self, state: OffPolicyState) -> OffPolicyState:
        """``state`` without the replay."""
        return state.replace(buffer=())

    def advanced(self, acting: OffPolicyState) -> dict[str, Any]:
        """What :func:`~rollax.agents.offpolicy.advance` changes."""
        return {name: getattr(acting, name) for name in ADVANCED}

    def rollout(self, state: OffPolicyState) -> tuple[OffPolicyState, tuple]:
        """``train_every`` steps of every member's environments.

        Returns the acting state advanced, and the steps: for each, the observations,
        ``first`` and carry that met it, what ``explore`` gave and the step's
        :class:`~rollax.types.TimeStep` (leaves ``(members, 1, E, ...)``); then the
        episodes that ended and the sum of their returns, ``(members, 1)``.
        """
        host, rows = self.loop.envs.host, self.loop.rows
        shape = (host.num_envs, *host.action_space.shape)
        members = (self.loop.members, 1)
        sums = (np.zeros(members, np.int32), np.zeros(members, np.float32))
        records = []
        for _ in range(self.driver.config.train_every):
            acted = self._explore(state)
            ts = host.step(np.asarray(acted[0]).reshape(shape))
            ts = TimeStep(
                obs=rows(ts.obs),
                reward=rows(ts.reward),
                terminated=rows(ts.terminated),
                truncated=rows(ts.truncated),
                final_obs=rows(ts.final_obs),
                info={"episode_return": rows(ts.info["episode_return"])},
            )
            before = {"obs": state.obs, "first": state.first, "carry": state.carry}
            records.append((before, acted, ts))
            state, sums = self._advance(state, acted, ts, sums)
        return state, (tuple(records), sums)

    def update(
        self, state: OffPolicyState, acted: OffPolicyState, batch: tuple, totals: dict
    ) -> tuple[OffPolicyState, dict]:  # fmt: skip
        """The rollout's transitions stored, then the learning phase."""
        del acted
        return self._learn(state.replace(buffer=()), state.buffer, batch, totals)

    def compile_jobs(self, state: OffPolicyState, totals: dict) -> list:
        """Acting, advancing and learning, for a state of these shapes."""
        acting = self.acting_state(state)
        acted = jax.eval_shape(self._explore, acting)
        reward = jax.ShapeDtypeStruct(state.first.shape, jnp.float32)
        ts = TimeStep(
            obs=state.obs,
            reward=reward,
            terminated=state.first,
            truncated=state.first,
            final_obs=state.obs,
            info={"episode_return": reward},
        )
        members = (self.loop.members, 1)
        ended = (jax.ShapeDtypeStruct(members, jnp.int32),
                 jax.ShapeDtypeStruct(members, jnp.float32))  # fmt: skip
        before = {"obs": state.obs, "first": state.first, "carry": state.carry}
        steps = (((before, acted, ts),) * self.driver.config.train_every, ended)
        return [
            lambda: self._explore.lower(acting).compile(),
            lambda: self._advance.lower(acting, acted, ts, ended).compile(),
            lambda: self._learn.lower(acting, state.buffer, steps, totals).compile(),
        ]
