"""Classic control environments in pure JAX, matching Gymnasium's step for step."""

from rollax.envs.classic.acrobot import Acrobot, AcrobotParams, AcrobotState
from rollax.envs.classic.cartpole import CartPole, CartPoleParams, CartPoleState
from rollax.envs.classic.mountain_car import (
    MountainCar,
    MountainCarContinuous,
    MountainCarContinuousParams,
    MountainCarParams,
    MountainCarState,
)
from rollax.envs.classic.pendulum import Pendulum, PendulumParams, PendulumState

__all__ = [
    "Acrobot",
    "AcrobotParams",
    "AcrobotState",
    "CartPole",
    "CartPoleParams",
    "CartPoleState",
    "MountainCar",
    "MountainCarContinuous",
    "MountainCarContinuousParams",
    "MountainCarParams",
    "MountainCarState",
    "Pendulum",
    "PendulumParams",
    "PendulumState",
]
