"""A jitted rollout that replays a fixed action sequence, shared by environment tests."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def replay_actions(env, key, actions, params=None):
    """Timesteps of a jitted rollout replaying ``actions`` (time-major), reset included."""

    @jax.jit
    def run(key, actions, params):
        state, first = env.reset(key, params)

        def body(state, action):
            state, ts = env.step(state, action, params)
            return state, ts

        _, steps = jax.lax.scan(body, state, actions)
        return jax.tree.map(lambda a, b: jnp.concatenate([a[None], b]), first, steps)

    return jax.tree.map(np.asarray, run(key, actions, params or env.default_params))
