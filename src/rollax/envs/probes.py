"""Probe environments: tiny tasks whose optimal values are known, to test a learner.

Each probe isolates one thing an agent must get right (after Andy Jones's "debugging RL"
probes). Observations are float32 ``(1,)``; actions are ``Discrete(2)`` or, with
``continuous=True``, a float32 ``(1,)`` in ``[-1, 1]``. With discount ``gamma``:

- ``one_step``: observe 0, reward 1, terminate. ``V = 1``.
- ``observation``: observe +1 or -1 (at random), reward that value, terminate.
  ``V(o) = o``.
- ``delayed``: observe 0, reward 0; observe 1, reward 1, terminate. ``V(0) = gamma``,
  ``V(1) = 1``.
- ``action``: observe 0; discrete: reward +1 for action 1, -1 for 0; continuous: reward
  ``a``; terminate. ``Q(0, 1) = 1``, ``Q(0, 0) = -1``; continuous ``Q(0, a) = a``.
- ``truncation``: observe 0, reward 1, never terminate; the time limit truncates every
  ``max_episode_steps``. ``V = 1 / (1 - gamma)``: only a learner that bootstraps through
  truncation gets it.
"""

from __future__ import annotations

from typing import Any, Literal

import jax
import jax.numpy as jnp
import numpy as np

from rollax._struct import pytree_dataclass
from rollax.envs._base import Environment, EnvParams
from rollax.spaces import Box, Discrete, Space

__all__ = ["PROBE_KINDS", "Probe", "ProbeParams", "ProbeState"]

ProbeKind = Literal["one_step", "observation", "delayed", "action", "truncation"]
PROBE_KINDS: tuple[str, ...] = ("one_step", "observation", "delayed", "action", "truncation")
"""The probes, in order of what they test (see the module's table)."""


@pytree_dataclass
class ProbeParams(EnvParams):
    """Attributes: max_episode_steps: the time limit (what truncates ``truncation``)."""

    max_episode_steps: Any = np.int32(10)


@pytree_dataclass
class ProbeState:
    """Attributes: ``t`` int32 ``()`` steps taken; ``sign`` float32 ``()``, +1 or -1."""

    t: jax.Array
    sign: jax.Array


class Probe(Environment[ProbeState, ProbeParams]):
    """A probe environment (see the module's table).

    Args:
        kind: One of :data:`PROBE_KINDS`.
        continuous: A ``Box`` action in ``[-1, 1]`` instead of ``Discrete(2)``.
    """

    def __init__(self, kind: ProbeKind, continuous: bool = False) -> None:
        if kind not in PROBE_KINDS:
            raise ValueError(f"kind must be one of {list(PROBE_KINDS)}, got {kind!r}.")
        self.kind = kind
        self.continuous = bool(continuous)

    @property
    def name(self) -> str:
        return f"Probe({self.kind!r}{', continuous' if self.continuous else ''})"

    @property
    def default_params(self) -> ProbeParams:
        return ProbeParams()

    @property
    def observation_space(self) -> Space:
        return Box(low=-1.0, high=1.0, shape=(1,), dtype=jnp.float32)

    @property
    def action_space(self) -> Space:
        if self.continuous:
            return Box(low=-1.0, high=1.0, shape=(1,), dtype=jnp.float32)
        return Discrete(2)

    def reset_env(self, key: jax.Array, params: ProbeParams) -> ProbeState:
        sign = jnp.where(jax.random.bernoulli(key), 1.0, -1.0).astype(jnp.float32)
        return ProbeState(t=jnp.zeros((), jnp.int32), sign=sign)

    def observe(self, state: ProbeState, params: ProbeParams) -> jax.Array:
        if self.kind == "observation":
            value = state.sign
        elif self.kind == "delayed":
            value = state.t.astype(jnp.float32)
        else:
            value = jnp.zeros((), jnp.float32)
        return jnp.reshape(value, (1,)).astype(jnp.float32)

    def step_env(
        self, state: ProbeState, action: jax.Array, params: ProbeParams
    ) -> tuple[ProbeState, jax.Array, jax.Array]:
        terminated = jnp.ones((), bool)
        if self.kind == "one_step":
            reward = jnp.ones((), jnp.float32)
        elif self.kind == "observation":
            reward = state.sign
        elif self.kind == "delayed":
            reward = (state.t == 1).astype(jnp.float32)
            terminated = state.t == 1
        elif self.kind == "action":
            if self.continuous:
                reward = jnp.clip(action.reshape(()), -1.0, 1.0).astype(jnp.float32)
            else:
                reward = jnp.where(action == 1, 1.0, -1.0).astype(jnp.float32)
        else:  # truncation
            reward = jnp.ones((), jnp.float32)
            terminated = jnp.zeros((), bool)
        return state.replace(t=state.t + 1), reward, terminated
