"""Pendulum-v1: swing a pendulum up and hold it, with Gymnasium's dynamics step for step."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rollax import render as rr
from rollax._struct import pytree_dataclass
from rollax.envs._base import Environment, EnvParams
from rollax.spaces import Box

__all__ = ["Pendulum", "PendulumParams", "PendulumState"]


@pytree_dataclass
class PendulumParams(EnvParams):
    """Constants of Pendulum-v1 (Gymnasium's values by default).

    Attributes:
        max_episode_steps: Time limit; 200 as in ``Pendulum-v1``.
        max_speed: Bound of the angular velocity (rad/s).
        max_torque: Bound of the torque; actions beyond it are clipped.
        dt: Seconds per step.
        g: Gravitational acceleration.
        m: Mass of the pendulum.
        l: Length of the pendulum.
        reset_angle: Initial angle is uniform in ``[-reset_angle, reset_angle]``.
        reset_velocity: Initial angular velocity is uniform in
            ``[-reset_velocity, reset_velocity]``.
    """

    max_episode_steps: Any = np.int32(200)
    max_speed: Any = np.float32(8.0)
    max_torque: Any = np.float32(2.0)
    dt: Any = np.float32(0.05)
    g: Any = np.float32(10.0)
    m: Any = np.float32(1.0)
    l: Any = np.float32(1.0)  # noqa: E741 (Gymnasium's name)
    reset_angle: Any = np.float32(np.pi)
    reset_velocity: Any = np.float32(1.0)


@pytree_dataclass
class PendulumState:
    """Attributes: angle ``theta`` (0 is upright) and ``theta_dot``; float32 ``()`` each."""

    theta: jax.Array
    theta_dot: jax.Array


def _angle_normalize(x: jax.Array) -> jax.Array:
    return ((x + jnp.pi) % (2 * jnp.pi)) - jnp.pi


class Pendulum(Environment[PendulumState, PendulumParams]):
    """Swing a pendulum up and keep it upright with a torque in ``[-2, 2]`` (float32 ``(1,)``).

    The reward is minus a cost on angle, velocity and torque. Never terminates; truncated
    after 200 steps. Observation: float32 ``(3,)`` = cos(theta), sin(theta), theta_dot.
    """

    @property
    def default_params(self) -> PendulumParams:
        return PendulumParams()

    @property
    def observation_space(self) -> Box:
        high = np.array([1.0, 1.0, self.default_params.max_speed], np.float32)
        return Box(-high, high, (3,))

    @property
    def action_space(self) -> Box:
        t = self.default_params.max_torque
        return Box(-t, t, (1,))

    def reset_env(self, key: jax.Array, params: PendulumParams) -> PendulumState:
        high = jnp.stack([params.reset_angle, params.reset_velocity]).astype(jnp.float32)
        theta, theta_dot = jax.random.uniform(key, (2,), jnp.float32, -high, high)
        return PendulumState(theta, theta_dot)

    def step_env(
        self, state: PendulumState, action: jax.Array, params: PendulumParams
    ) -> tuple[PendulumState, jax.Array, jax.Array]:
        p = params
        u = jnp.clip(action[0], -p.max_torque, p.max_torque)
        th, thdot = state.theta, state.theta_dot
        costs = _angle_normalize(th) ** 2 + 0.1 * thdot**2 + 0.001 * u**2
        new_thdot = thdot + (3 * p.g / (2 * p.l) * jnp.sin(th) + 3.0 / (p.m * p.l**2) * u) * p.dt
        new_thdot = jnp.clip(new_thdot, -p.max_speed, p.max_speed)
        new_th = th + new_thdot * p.dt
        reward = (-costs).astype(jnp.float32)
        return PendulumState(new_th, new_thdot), reward, jnp.zeros((), jnp.bool_)

    def observe(self, state: PendulumState, params: PendulumParams) -> jax.Array:
        return jnp.stack([jnp.cos(state.theta), jnp.sin(state.theta), state.theta_dot])

    def render(self, state: PendulumState, params: PendulumParams) -> jax.Array:
        """The rod seen from the front, upright at ``theta = 0``: uint8 ``(128, 128, 3)``."""
        view = rr.View(-1.2, 1.2, -1.2, 1.2, 128, 128)
        origin = (jnp.float32(0.0), jnp.float32(0.0))
        tip = (-jnp.sin(state.theta), jnp.cos(state.theta))
        frame = rr.canvas(view)
        frame = rr.draw(frame, rr.segment(view, origin, tip, 0.1), (0.8, 0.3, 0.3))
        return rr.to_uint8(rr.draw(frame, rr.disk(view, origin, 0.05), (0.0, 0.0, 0.0)))
