"""Probe environments for tests of recurrent agents."""

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rollax._struct import pytree_dataclass
from rollax.envs import Environment, EnvParams
from rollax.spaces import Box, Discrete

LIMIT = 3  # the time limit: truncates an episode that is never ended by action 1


@pytree_dataclass
class CounterParams(EnvParams):
    max_episode_steps: Any = np.int32(LIMIT)


@pytree_dataclass
class CounterState:
    t: jax.Array


class Counter(Environment):
    """Observes its step index in the episode; action 1 terminates; truncated at ``LIMIT``.

    Under a uniform policy episodes end on consecutive steps half the time, and some run
    into the time limit.
    """

    @property
    def name(self) -> str:
        return "Counter"

    @property
    def default_params(self) -> CounterParams:
        return CounterParams()

    @property
    def observation_space(self) -> Box:
        return Box(0.0, float(LIMIT), (1,), jnp.float32)

    @property
    def action_space(self) -> Discrete:
        return Discrete(2)

    def reset_env(self, key: jax.Array, params: CounterParams) -> CounterState:
        return CounterState(t=jnp.zeros((), jnp.int32))

    def observe(self, state: CounterState, params: CounterParams) -> jax.Array:
        return state.t.astype(jnp.float32).reshape(1)

    def step_env(self, state: CounterState, action: jax.Array, params: CounterParams) -> tuple:
        # A reward that differs from step to step, so that sums over steps can be checked.
        reward = 0.25 * (state.t + 1).astype(jnp.float32)
        return state.replace(t=state.t + 1), reward, action == 1
