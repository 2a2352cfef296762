"""Acrobot-v1: swing a two-link arm up, with Gymnasium's ("book") dynamics step for step."""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rollax import render as rr
from rollax._struct import pytree_dataclass
from rollax.envs._base import Environment, EnvParams
from rollax.spaces import Box, Discrete

__all__ = ["Acrobot", "AcrobotParams", "AcrobotState"]


@pytree_dataclass
class AcrobotParams(EnvParams):
    """Physical constants of Acrobot (Gymnasium's values by default).

    Attributes:
        max_episode_steps: Time limit; 500 as in ``Acrobot-v1``.
        dt: Integration interval of one step (s), one RK4 step.
        link_length_1: Length of the first link (m).
        link_mass_1: Mass of the first link (kg).
        link_mass_2: Mass of the second link (kg).
        link_com_pos_1: Position of the first link's centre of mass (m).
        link_com_pos_2: Position of the second link's centre of mass (m).
        link_moi: Moment of inertia of both links.
        max_vel_1: Bound of the first joint's angular velocity (rad/s).
        max_vel_2: Bound of the second joint's angular velocity (rad/s).
        gravity: Gravitational acceleration (m/s^2).
        reset_bound: Initial state components are uniform in ``[-reset_bound, reset_bound]``.
    """

    max_episode_steps: Any = np.int32(500)
    dt: Any = np.float32(0.2)
    link_length_1: Any = np.float32(1.0)
    link_mass_1: Any = np.float32(1.0)
    link_mass_2: Any = np.float32(1.0)
    link_com_pos_1: Any = np.float32(0.5)
    link_com_pos_2: Any = np.float32(0.5)
    link_moi: Any = np.float32(1.0)
    max_vel_1: Any = np.float32(4 * math.pi)
    max_vel_2: Any = np.float32(9 * math.pi)
    gravity: Any = np.float32(9.8)
    reset_bound: Any = np.float32(0.1)


@pytree_dataclass
class AcrobotState:
    """Attributes: joint angles ``theta1, theta2`` and velocities; float32 ``()`` each."""

    theta1: jax.Array
    theta2: jax.Array
    dtheta1: jax.Array
    dtheta2: jax.Array


def _wrap(x: jax.Array, low: float, high: float) -> jax.Array:
    """Shift ``x`` by whole periods into ``[low, high]``, as Gymnasium's while-loops do."""
    period = high - low
    x = jnp.where(x > high, x - period * jnp.ceil((x - high) / period), x)
    return jnp.where(x < low, x + period * jnp.ceil((low - x) / period), x)


class Acrobot(Environment[AcrobotState, AcrobotParams]):
    """Swing the tip of a two-link arm above the bar.

    Actions 0, 1, 2 apply torque -1, 0, +1 at the joint between the links; reward -1 per
    step until the tip gets there.

    Observation: float32 ``(6,)`` = cos/sin of both angles and both angular velocities.
    """

    torques = (-1.0, 0.0, 1.0)

    @property
    def default_params(self) -> AcrobotParams:
        return AcrobotParams()

    @property
    def observation_space(self) -> Box:
        p = self.default_params
        high = np.array([1, 1, 1, 1, p.max_vel_1, p.max_vel_2], np.float32)
        return Box(-high, high, (6,))

    @property
    def action_space(self) -> Discrete:
        return Discrete(3)

    def reset_env(self, key: jax.Array, params: AcrobotParams) -> AcrobotState:
        s = jax.random.uniform(key, (4,), jnp.float32, -params.reset_bound, params.reset_bound)
        return AcrobotState(*s)

    def _derivatives(self, s: jax.Array, torque: jax.Array, p: AcrobotParams) -> jax.Array:
        m1, m2 = p.link_mass_1, p.link_mass_2
        l1, lc1, lc2 = p.link_length_1, p.link_com_pos_1, p.link_com_pos_2
        i1 = i2 = p.link_moi
        g = p.gravity
        theta1, theta2, dtheta1, dtheta2 = s
        d1 = m1 * lc1**2 + m2 * (l1**2 + lc2**2 + 2 * l1 * lc2 * jnp.cos(theta2)) + i1 + i2
        d2 = m2 * (lc2**2 + l1 * lc2 * jnp.cos(theta2)) + i2
        phi2 = m2 * lc2 * g * jnp.cos(theta1 + theta2 - jnp.pi / 2.0)
        phi1 = (
            -m2 * l1 * lc2 * dtheta2**2 * jnp.sin(theta2)
            - 2 * m2 * l1 * lc2 * dtheta2 * dtheta1 * jnp.sin(theta2)
            + (m1 * lc1 + m2 * l1) * g * jnp.cos(theta1 - jnp.pi / 2)
            + phi2
        )
        ddtheta2 = (
            torque + d2 / d1 * phi1 - m2 * l1 * lc2 * dtheta1**2 * jnp.sin(theta2) - phi2
        ) / (m2 * lc2**2 + i2 - d2**2 / d1)
        ddtheta1 = -(d2 * ddtheta2 + phi1) / d1
        return jnp.stack([dtheta1, dtheta2, ddtheta1, ddtheta2])

    def step_env(
        self, state: AcrobotState, action: jax.Array, params: AcrobotParams
    ) -> tuple[AcrobotState, jax.Array, jax.Array]:
        torque = jnp.asarray(self.torques, jnp.float32)[action]
        s = jnp.stack([state.theta1, state.theta2, state.dtheta1, state.dtheta2])
        dt = params.dt
        k1 = self._derivatives(s, torque, params)
        k2 = self._derivatives(s + dt / 2 * k1, torque, params)
        k3 = self._derivatives(s + dt / 2 * k2, torque, params)
        k4 = self._derivatives(s + dt * k3, torque, params)
        ns = s + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
        next_state = AcrobotState(
            theta1=_wrap(ns[0], -math.pi, math.pi),
            theta2=_wrap(ns[1], -math.pi, math.pi),
            dtheta1=jnp.clip(ns[2], -params.max_vel_1, params.max_vel_1),
            dtheta2=jnp.clip(ns[3], -params.max_vel_2, params.max_vel_2),
        )
        terminated = (
            -jnp.cos(next_state.theta1) - jnp.cos(next_state.theta2 + next_state.theta1) > 1.0
        )
        reward = jnp.where(terminated, 0.0, -1.0).astype(jnp.float32)
        return next_state, reward, terminated

    def observe(self, state: AcrobotState, params: AcrobotParams) -> jax.Array:
        return jnp.stack(
            [
                jnp.cos(state.theta1),
                jnp.sin(state.theta1),
                jnp.cos(state.theta2),
                jnp.sin(state.theta2),
                state.dtheta1,
                state.dtheta2,
            ]
        )

    def render(self, state: AcrobotState, params: AcrobotParams) -> jax.Array:
        """Both links and the height to swing above: uint8 ``(160, 160, 3)``."""
        view = rr.View(-2.2, 2.2, -2.2, 2.2, 160, 160)
        origin = (jnp.float32(0.0), jnp.float32(0.0))
        elbow = (jnp.sin(state.theta1), -jnp.cos(state.theta1))
        angle = state.theta1 + state.theta2
        hand = (elbow[0] + jnp.sin(angle), elbow[1] - jnp.cos(angle))
        frame = rr.canvas(view)
        frame = rr.draw(frame, rr.box(view, (0.0, 1.0), (2.2, 0.01)), (0.0, 0.0, 0.0))
        frame = rr.draw(frame, rr.segment(view, origin, elbow, 0.1), (0.0, 0.8, 0.8))
        frame = rr.draw(frame, rr.segment(view, elbow, hand, 0.1), (0.0, 0.8, 0.8))
        frame = rr.draw(frame, rr.disk(view, origin, 0.08), (0.8, 0.8, 0.0))
        return rr.to_uint8(rr.draw(frame, rr.disk(view, elbow, 0.08), (0.8, 0.8, 0.0)))
