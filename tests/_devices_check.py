"""Run in a subprocess by tests/test_devices.py, with JAX's CPU split into 4 devices.

Trains each agent with the same global batch on 1 device (4 logical shards) and on 4
devices, and prints one JSON line of what the test asserts on.
"""

import json
import sys

import jax

jax.config.update("jax_num_cpu_devices", 4)

import numpy as np  # noqa: E402

from rollax.agents.dqn import DQNConfig, make_dqn  # noqa: E402
from rollax.agents.ppo import PPOConfig, make_ppo  # noqa: E402
from rollax.agents.pqn import PQNConfig, make_pqn  # noqa: E402
from rollax.agents.sac import SACConfig, make_sac  # noqa: E402
from rollax.agents.td3 import TD3Config, make_td3  # noqa: E402

CASES = {
    "ppo": (
        lambda **kw: make_ppo(PPOConfig(num_envs=8, num_steps=16, **kw), "CartPole-v1"),
        256,
    ),
    "pqn": (
        lambda **kw: make_pqn(
            PQNConfig(num_envs=8, num_steps=16, num_minibatches=2, hidden_sizes=(16,), **kw),
            "CartPole-v1",
        ),
        256,
    ),
    "dqn": (
        lambda **kw: make_dqn(
            DQNConfig(num_envs=8, learning_starts=64, batch_size=32, buffer_size=512, **kw),
            "CartPole-v1",
        ),
        256,
    ),
    "recurrent_dqn": (
        lambda **kw: make_dqn(
            DQNConfig(
                num_envs=8,
                learning_starts=64,
                batch_size=32,
                buffer_size=512,
                recurrent="gru",
                cell_size=8,
                hidden_sizes=(8,),
                sequence_length=4,
                burn_in=2,
                **kw,
            ),
            "StatelessCartPole-v1",
        ),
        256,
    ),
    "sac": (
        lambda **kw: make_sac(
            SACConfig(num_envs=4, learning_starts=64, batch_size=32, buffer_size=512, **kw),
            "Pendulum-v1",
        ),
        128,
    ),
    "td3": (
        lambda **kw: make_td3(
            TD3Config(num_envs=4, learning_starts=64, batch_size=32, buffer_size=512, **kw),
            "Pendulum-v1",
        ),
        128,
    ),
}


def leaves(tree):
    return [np.asarray(x, np.float64) for x in jax.tree.leaves(tree)]


def max_diff(a, b):
    return max(float(np.max(np.abs(x - y))) if x.size else 0.0 for x, y in zip(a, b, strict=True))


def check(name: str) -> dict:
    build, steps = CASES[name]
    out = {"devices": jax.device_count()}
    # One seed, its 4 shards on 1 device and on 4.
    runs = {}
    for devices in (1, 4):
        agent = build(num_shards=4, devices=devices)
        state, metrics = agent.run(agent.init(jax.random.key(3)), steps)
        runs[devices] = (agent, state, metrics)
    (_, one, m1), (_, four, m4) = runs[1], runs[4]
    out["shards_max_diff"] = max_diff(leaves(one.params), leaves(four.params))
    out["shards_episodes"] = [int(m1["episodes"][0]), int(m4["episodes"][0])]
    out["obs_devices"] = len(jax.tree.leaves(four.obs)[0].sharding.device_set)
    out["params_devices"] = len(jax.tree.leaves(four.params)[0].sharding.device_set)
    out["obs_spec"] = str(jax.tree.leaves(four.obs)[0].sharding.spec)
    # Four seeds: on one device, and one seed per device.
    seeds = {}
    for devices in (1, 4):
        agent = build(num_seeds=4, devices=devices)
        state, _ = agent.run(agent.init(jax.random.key(5)), steps)
        seeds[devices] = state
    out["seeds_max_diff"] = max_diff(leaves(seeds[1].params), leaves(seeds[4].params))
    out["seed_params_devices"] = len(jax.tree.leaves(seeds[4].params)[0].sharding.device_set)
    return out


if __name__ == "__main__":
    print(json.dumps({name: check(name) for name in sys.argv[1:]}))
