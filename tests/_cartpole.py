"""Shared by the adapter tests: rollax CartPoles put into Gymnasium's physical states."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np


def put_gymnasium_states_into(ours: Any, reference_envs: list) -> None:
    """Give an adapter's rollax CartPoles the states of Gymnasium's (``reference_envs``, one
    per environment, each wrapping a ``CartPoleEnv``): their resets draw other numbers, so a
    step-for-step comparison starts both from the same states."""
    states = np.stack([e.unwrapped.state for e in reference_envs]).astype(np.float32)
    core = ours.state.core.replace(
        x=jnp.asarray(states[:, 0]),
        x_dot=jnp.asarray(states[:, 1]),
        theta=jnp.asarray(states[:, 2]),
        theta_dot=jnp.asarray(states[:, 3]),
    )
    ours.state = ours.state.replace(core=core)
