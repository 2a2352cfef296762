"""CartPole-v1: balance a pole on a cart, with Gymnasium's dynamics step for step."""

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

__all__ = ["CartPole", "CartPoleParams", "CartPoleState"]


@pytree_dataclass
class CartPoleParams(EnvParams):
    """Physical constants of CartPole (Gymnasium's values by default).

    Attributes:
        max_episode_steps: Time limit; 500 as in ``CartPole-v1``.
        gravity: Gravitational acceleration (m/s^2).
        masscart: Mass of the cart (kg).
        masspole: Mass of the pole (kg).
        length: Half the pole's length (m).
        force_mag: Magnitude of the force an action applies (N).
        tau: Seconds between state updates.
        theta_threshold: Pole angle (rad) beyond which the episode terminates.
        x_threshold: Cart position beyond which the episode terminates.
        reset_bound: Initial state components are uniform in ``[-reset_bound, reset_bound]``.
    """

    max_episode_steps: Any = np.int32(500)
    gravity: Any = np.float32(9.8)
    masscart: Any = np.float32(1.0)
    masspole: Any = np.float32(0.1)
    length: Any = np.float32(0.5)
    force_mag: Any = np.float32(10.0)
    tau: Any = np.float32(0.02)
    theta_threshold: Any = np.float32(12 * 2 * math.pi / 360)
    x_threshold: Any = np.float32(2.4)
    reset_bound: Any = np.float32(0.05)


@pytree_dataclass
class CartPoleState:
    """Attributes: x, x_dot, theta, theta_dot: float32 ``()`` each."""

    x: jax.Array
    x_dot: jax.Array
    theta: jax.Array
    theta_dot: jax.Array


class CartPole(Environment[CartPoleState, CartPoleParams]):
    """Push the cart left (0) or right (1) to keep the pole upright; reward 1 per step.

    Observation: float32 ``(4,)`` = cart position, cart velocity, pole angle, pole angular
    velocity. Terminates when the pole tilts past 12 degrees or the cart leaves ``[-2.4, 2.4]``.
    """

    @property
    def default_params(self) -> CartPoleParams:
        return CartPoleParams()

    @property
    def observation_space(self) -> Box:
        p = self.default_params
        high = np.array([p.x_threshold * 2, np.inf, p.theta_threshold * 2, np.inf], np.float32)
        return Box(-high, high, (4,))

    @property
    def action_space(self) -> Discrete:
        return Discrete(2)

    def reset_env(self, key: jax.Array, params: CartPoleParams) -> CartPoleState:
        x, x_dot, theta, theta_dot = jax.random.uniform(
            key, (4,), jnp.float32, -params.reset_bound, params.reset_bound
        )
        return CartPoleState(x, x_dot, theta, theta_dot)

    def step_env(
        self, state: CartPoleState, action: jax.Array, params: CartPoleParams
    ) -> tuple[CartPoleState, jax.Array, jax.Array]:
        p = params
        force = jnp.where(action == 1, p.force_mag, -p.force_mag)
        total_mass = p.masspole + p.masscart
        polemass_length = p.masspole * p.length
        cos_theta = jnp.cos(state.theta)
        sin_theta = jnp.sin(state.theta)
        temp = (force + polemass_length * state.theta_dot**2 * sin_theta) / total_mass
        theta_acc = (p.gravity * sin_theta - cos_theta * temp) / (
            p.length * (4.0 / 3.0 - p.masspole * cos_theta**2 / total_mass)
        )
        x_acc = temp - polemass_length * theta_acc * cos_theta / total_mass
        # Explicit Euler, as Gymnasium's default "euler" integrator.
        x = state.x + p.tau * state.x_dot
        x_dot = state.x_dot + p.tau * x_acc
        theta = state.theta + p.tau * state.theta_dot
        theta_dot = state.theta_dot + p.tau * theta_acc
        terminated = (jnp.abs(x) > p.x_threshold) | (jnp.abs(theta) > p.theta_threshold)
        reward = jnp.ones((), jnp.float32)
        return CartPoleState(x, x_dot, theta, theta_dot), reward, terminated

    def observe(self, state: CartPoleState, params: CartPoleParams) -> jax.Array:
        return jnp.stack([state.x, state.x_dot, state.theta, state.theta_dot])

    def render(self, state: CartPoleState, params: CartPoleParams) -> jax.Array:
        """A side view: uint8 ``(120, 288, 3)``, the track spanning ``[-2.4, 2.4]``."""
        view = rr.View(-2.4, 2.4, -0.5, 1.5, 120, 288)
        pole_base = (state.x, jnp.float32(0.1))
        tip = (
            state.x + 2 * params.length * jnp.sin(state.theta),
            0.1 + 2 * params.length * jnp.cos(state.theta),
        )
        frame = rr.canvas(view)
        frame = rr.draw(frame, rr.box(view, (0.0, -0.13), (2.4, 0.008)), (0.0, 0.0, 0.0))
        frame = rr.draw(frame, rr.box(view, (state.x, 0.0), (0.2, 0.12)), (0.1, 0.1, 0.1))
        frame = rr.draw(frame, rr.segment(view, pole_base, tip, 0.04), (0.8, 0.6, 0.4))
        return rr.to_uint8(rr.draw(frame, rr.disk(view, pole_base, 0.04), (0.5, 0.5, 0.8)))
