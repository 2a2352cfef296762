"""MountainCar-v0 and MountainCarContinuous-v0, with Gymnasium's dynamics step for step."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rollax import render as rr
from rollax._struct import pytree_dataclass
from rollax.envs._base import Environment, EnvParams
from rollax.spaces import Box, Discrete

__all__ = [
    "MountainCar",
    "MountainCarContinuous",
    "MountainCarContinuousParams",
    "MountainCarParams",
    "MountainCarState",
]


@pytree_dataclass
class MountainCarParams(EnvParams):
    """Constants of MountainCar-v0 (Gymnasium's values by default).

    Attributes:
        max_episode_steps: Time limit; 200 as in ``MountainCar-v0``.
        min_position: Left end of the track.
        max_position: Right end of the track.
        max_speed: Bound of the velocity's magnitude.
        goal_position: Position to reach.
        goal_velocity: Minimum velocity at the goal.
        force: Acceleration of one unit of action.
        gravity: Pull of the slope.
        reset_low: Initial position is uniform in ``[reset_low, reset_high]``.
        reset_high: See ``reset_low``.
    """

    max_episode_steps: Any = np.int32(200)
    min_position: Any = np.float32(-1.2)
    max_position: Any = np.float32(0.6)
    max_speed: Any = np.float32(0.07)
    goal_position: Any = np.float32(0.5)
    goal_velocity: Any = np.float32(0.0)
    force: Any = np.float32(0.001)
    gravity: Any = np.float32(0.0025)
    reset_low: Any = np.float32(-0.6)
    reset_high: Any = np.float32(-0.4)


@pytree_dataclass
class MountainCarContinuousParams(EnvParams):
    """Constants of MountainCarContinuous-v0 (Gymnasium's values by default).

    Attributes:
        max_episode_steps: Time limit; 999 as in ``MountainCarContinuous-v0``.
        min_position: Left end of the track.
        max_position: Right end of the track.
        max_speed: Bound of the velocity's magnitude.
        goal_position: Position to reach.
        goal_velocity: Minimum velocity at the goal.
        power: Acceleration of one unit of force.
        gravity: Pull of the slope.
        goal_reward: Reward for reaching the goal.
        action_cost: The reward loses ``action_cost * action**2`` each step.
        reset_low: Initial position is uniform in ``[reset_low, reset_high]``.
        reset_high: See ``reset_low``.
    """

    max_episode_steps: Any = np.int32(999)
    min_position: Any = np.float32(-1.2)
    max_position: Any = np.float32(0.6)
    max_speed: Any = np.float32(0.07)
    goal_position: Any = np.float32(0.45)
    goal_velocity: Any = np.float32(0.0)
    power: Any = np.float32(0.0015)
    gravity: Any = np.float32(0.0025)
    goal_reward: Any = np.float32(100.0)
    action_cost: Any = np.float32(0.1)
    reset_low: Any = np.float32(-0.6)
    reset_high: Any = np.float32(-0.4)


@pytree_dataclass
class MountainCarState:
    """Attributes: position and velocity of the car; float32 ``()`` each."""

    position: jax.Array
    velocity: jax.Array


def _reset(key: jax.Array, params: Any) -> MountainCarState:
    position = jax.random.uniform(key, (), jnp.float32, params.reset_low, params.reset_high)
    return MountainCarState(position, jnp.zeros((), jnp.float32))


def _move(velocity: jax.Array, position: jax.Array, p: Any) -> MountainCarState:
    """Clip the velocity, advance the position, stop at the left wall."""
    velocity = jnp.clip(velocity, -p.max_speed, p.max_speed)
    position = jnp.clip(position + velocity, p.min_position, p.max_position)
    velocity = jnp.where((position == p.min_position) & (velocity < 0), 0.0, velocity)
    return MountainCarState(position, velocity)


def _at_goal(state: MountainCarState, p: Any) -> jax.Array:
    return (state.position >= p.goal_position) & (state.velocity >= p.goal_velocity)


def _observe(state: MountainCarState) -> jax.Array:
    return jnp.stack([state.position, state.velocity])


def _observation_space(p: Any) -> Box:
    return Box(
        np.array([p.min_position, -p.max_speed], np.float32),
        np.array([p.max_position, p.max_speed], np.float32),
        (2,),
    )


def _render(state: MountainCarState, params: Any) -> jax.Array:
    """The hill ``0.45 sin(3x) + 0.55``, the car and the goal flag: uint8 ``(125, 180, 3)``."""
    view = rr.View(-1.2, 0.6, 0.0, 1.25, 125, 180)
    x, y = view.grid()
    hill = 0.45 * jnp.sin(3 * x) + 0.55
    frame = rr.canvas(view)
    frame = rr.draw(frame, y < hill, (0.85, 0.85, 0.75))
    frame = rr.draw(frame, jnp.abs(y - hill) < 0.012, (0.0, 0.0, 0.0))
    goal_y = 0.45 * jnp.sin(3 * params.goal_position) + 0.55
    pole = rr.segment(
        view, (params.goal_position, goal_y), (params.goal_position, goal_y + 0.15), 0.01
    )
    frame = rr.draw(frame, pole, (0.0, 0.0, 0.0))
    flag = rr.box(view, (params.goal_position + 0.04, goal_y + 0.13), (0.04, 0.02))
    frame = rr.draw(frame, flag, (0.8, 0.8, 0.0))
    car_y = 0.45 * jnp.sin(3 * state.position) + 0.55 + 0.04
    return rr.to_uint8(
        rr.draw(frame, rr.disk(view, (state.position, car_y), 0.045), (0.2, 0.2, 0.8))
    )


class MountainCar(Environment[MountainCarState, MountainCarParams]):
    """Drive an underpowered car up a hill.

    Push left (0), nothing (1) or right (2); reward -1 per step until the goal.
    Observation: float32 ``(2,)`` position, velocity.
    """

    @property
    def default_params(self) -> MountainCarParams:
        return MountainCarParams()

    @property
    def observation_space(self) -> Box:
        return _observation_space(self.default_params)

    @property
    def action_space(self) -> Discrete:
        return Discrete(3)

    def reset_env(self, key: jax.Array, params: MountainCarParams) -> MountainCarState:
        return _reset(key, params)

    def step_env(
        self, state: MountainCarState, action: jax.Array, params: MountainCarParams
    ) -> tuple[MountainCarState, jax.Array, jax.Array]:
        p = params
        push = (action - 1).astype(jnp.float32)
        velocity = state.velocity + push * p.force + jnp.cos(3 * state.position) * (-p.gravity)
        next_state = _move(velocity, state.position, p)
        return next_state, jnp.full((), -1.0, jnp.float32), _at_goal(next_state, p)

    def observe(self, state: MountainCarState, params: MountainCarParams) -> jax.Array:
        return _observe(state)

    def render(self, state: MountainCarState, params: MountainCarParams) -> jax.Array:
        """The hill, the car and the goal flag: uint8 ``(125, 180, 3)``."""
        return _render(state, params)


class MountainCarContinuous(Environment[MountainCarState, MountainCarContinuousParams]):
    """MountainCar with a continuous force in ``[-1, 1]`` (float32 ``(1,)``).

    Reward 100 at the goal minus ``0.1 * action**2`` per step. Observation: float32 ``(2,)``.
    """

    @property
    def default_params(self) -> MountainCarContinuousParams:
        return MountainCarContinuousParams()

    @property
    def observation_space(self) -> Box:
        return _observation_space(self.default_params)

    @property
    def action_space(self) -> Box:
        return Box(-1.0, 1.0, (1,))

    def reset_env(self, key: jax.Array, params: MountainCarContinuousParams) -> MountainCarState:
        return _reset(key, params)

    def step_env(
        self, state: MountainCarState, action: jax.Array, params: MountainCarContinuousParams
    ) -> tuple[MountainCarState, jax.Array, jax.Array]:
        p = params
        force = jnp.clip(action[0], -1.0, 1.0)
        velocity = state.velocity + force * p.power - p.gravity * jnp.cos(3 * state.position)
        next_state = _move(velocity, state.position, p)
        terminated = _at_goal(next_state, p)
        # The cost uses the unclipped action, as Gymnasium does.
        reward = jnp.where(terminated, p.goal_reward, 0.0) - p.action_cost * action[0] ** 2
        return next_state, reward.astype(jnp.float32), terminated

    def observe(self, state: MountainCarState, params: MountainCarContinuousParams) -> jax.Array:
        return _observe(state)

    def render(self, state: MountainCarState, params: MountainCarContinuousParams) -> jax.Array:
        """The hill, the car and the goal flag: uint8 ``(125, 180, 3)``."""
        return _render(state, params)
