"""Acting apart from the learner, run by test_host_training in a process with 2 CPU devices.

For PPO (on-policy) and SAC (off-policy) on Gymnasium environments, each of four settings
trains 3 iterations per run call, twice, recording every rollout's acting parameters (and
their device) and every update's result. Prints one JSON line.
"""

from __future__ import annotations

import hashlib
import json

import jax
import numpy as np

from rollax.agents.ppo import PPOConfig, make_ppo
from rollax.agents.sac import SACConfig, make_sac

AGENTS = {
    "ppo": (make_ppo, PPOConfig(num_envs=4, num_steps=16, num_epochs=1, num_minibatches=1,
                                hidden_sizes=(8,), num_seeds=2), "gymnasium/CartPole-v1"),
    "sac": (make_sac, SACConfig(num_envs=2, train_every=4, batch_size=16, learning_starts=8,
                                hidden_sizes=(8,), num_seeds=2), "gymnasium/Pendulum-v1"),
}  # fmt: skip
SETTINGS = {
    "sync": {},
    "sync_apart": {"actor_device": "1"},
    "lag": {"acting_lag": 1},
    "lag_apart": {"acting_lag": 1, "actor_device": "1"},
}


def _bits(tree) -> list[np.ndarray]:
    return [np.asarray(jax.random.key_data(x) if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)
                       else x) for x in jax.tree.leaves(tree)]  # fmt: skip


def _digest(tree) -> str:
    digest = hashlib.sha256()
    for x in _bits(tree):
        digest.update(x.tobytes())
    return digest.hexdigest()[:16]


def train(name: str, setting: dict) -> dict:
    make, config, env = AGENTS[name]
    agent = make(config.replace(**setting), env)
    iteration = agent.run.args[0]
    acted, updated = [], []
    rollout, update = iteration.rollout, iteration.update

    def recording_rollout(acting):
        params = acting.params
        acted.append((_digest(params), sorted({str(d) for x in jax.tree.leaves(params)
                                               for d in x.devices()})))  # fmt: skip
        return rollout(acting)

    def recording_update(*args):
        state, totals = update(*args)
        updated.append(_digest(state.params))
        return state, totals

    iteration.rollout, iteration.update = recording_rollout, recording_update
    state = agent.init(jax.random.key(7))
    initial = _digest(state.params)
    for _ in range(2):
        state, _ = agent.run(state, 3 * agent.steps_per_iteration)
    return {"initial": initial, "acted": acted, "updated": updated, "state": _digest(state)}


if __name__ == "__main__":
    print(json.dumps({n: {s: train(n, o) for s, o in SETTINGS.items()} for n in AGENTS}))
