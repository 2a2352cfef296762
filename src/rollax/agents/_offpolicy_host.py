"""The off-policy iteration on host environments: the driver's own pieces around the host's step.

Each iteration is ``train_every`` steps, each of them :func:`~rollax.agents.offpolicy.explore`
of every member (compiled), the :class:`~rollax.host.HostEnv`'s step of every member's
environments at once, and :func:`~rollax.agents.offpolicy.store` (compiled: the transitions
with their true successors go to each member's replay); then
:func:`~rollax.agents.offpolicy.learning_phase`, as the iteration inside a program does. The
replay ratio is the configuration's, exactly: ``gradient_steps`` per ``train_every``
vectorized steps. The rest (members, starts, checkpoints, evaluation) is the training
layer's host composition (:mod:`rollax.training._host`).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from rollax.agents._offpolicy import (
    OffPolicyDriver,
    OffPolicyState,
    explore,
    learning_phase,
    store,
)
from rollax.training import SHARD, HostIteration, HostLoop
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
        self._store = loop.mapped(self._stored, (layout, SHARD, SHARD, SHARD), (layout, SHARD))
        self._learn = loop.mapped(self._learned, (layout, SHARD, SHARD), (layout, SHARD))

    # One member's programs.

    def _stored(self, state: OffPolicyState, acted: tuple, ts: TimeStep, sums: tuple) -> tuple:
        """The step's transitions stored; ``sums`` of ended episodes and returns advanced."""
        action, exploration, carry, key = acted
        state, ended = store(self.driver, state, action, exploration, carry, key, ts, ())
        return state, jax.tree.map(jnp.add, sums, ended)

    def _learned(self, state: OffPolicyState, ended: tuple, totals: dict) -> tuple:
        """The learning phase after ``train_every`` steps; its metrics added to ``totals``."""
        episodes, return_sum = ended
        state, metrics = learning_phase(self.driver, state, episodes, return_sum)
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

    def iterate(self, state: OffPolicyState, totals: dict) -> tuple[OffPolicyState, dict]:
        """``train_every`` steps of every member's environments, then the learning phase."""
        host, rows = self.loop.envs.host, self.loop.rows
        shape = (host.num_envs, *host.action_space.shape)
        members = (self.loop.members, 1)
        sums = (np.zeros(members, np.int32), np.zeros(members, np.float32))
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
            state, sums = self._store(state, acted, ts, sums)
        return self._learn(state, sums, totals)

    def compile_jobs(self, state: OffPolicyState, totals: dict) -> list:
        """Acting, storing and learning, for a state of these shapes."""
        acted = jax.eval_shape(self._explore, state)
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
        return [
            lambda: self._explore.lower(state).compile(),
            lambda: self._store.lower(state, acted, ts, ended).compile(),
            lambda: self._learn.lower(state, ended, totals).compile(),
        ]
