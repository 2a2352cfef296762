"""Fingerprints of trained parameters and optimizer moments, to show what a change of the
training layer does to the bits of a run.

Each line trains an agent for a few iterations from a fixed key on one device and prints
a short hash of its parameters and of its Adam moments (every ``mu``, ``nu`` and ``count``
found in the optimizer state, whatever transformation holds them). Run it before and after
a change: equal hashes mean the same bits. The last line is one JSON object of every hash.

    python benchmarks/fingerprints.py [CASE ...]
"""

from __future__ import annotations

import hashlib
import sys

import jax
import numpy as np
import optax

import rollax
from _harness import emit
from rollax.agents.dqn import PRESETS as DQN_PRESETS
from rollax.agents.dqn import DQNConfig, make_dqn
from rollax.agents.ppo import PRESETS as PPO_PRESETS
from rollax.agents.ppo import PPOConfig, make_ppo
from rollax.agents.pqn import PRESETS as PQN_PRESETS
from rollax.agents.pqn import PQNConfig, make_pqn
from rollax.agents.sac import PRESETS as SAC_PRESETS
from rollax.agents.sac import SACConfig, make_sac
from rollax.agents.td3 import TD3Config, make_td3


def digest(tree) -> str:
    h = hashlib.sha256()
    for leaf in jax.tree.leaves(tree):
        h.update(np.ascontiguousarray(np.asarray(leaf)).tobytes())
    return h.hexdigest()[:12]


def adam_moments(tree) -> list:
    found = []

    def visit(node):
        if isinstance(node, optax.ScaleByAdamState):
            found.append((node.count, node.mu, node.nu))
            return
        children = jax.tree.leaves(node, is_leaf=lambda x: x is not node)
        if children and not (len(children) == 1 and children[0] is node):
            for child in children:
                visit(child)

    visit(tree)
    return found


def learner_of(state):
    return getattr(state, "learner", state)


def opt_states(learner) -> list:
    names = ("opt_state", "actor_opt", "critic_opt", "alpha_opt")
    return [getattr(learner, n) for n in names if hasattr(learner, n)]


def fingerprint(agent, steps: int, seeds: int) -> dict:
    state = agent.init(jax.random.key(7))
    state, _ = agent.run(state, steps)
    learner = learner_of(state)
    adam = [adam_moments(o) for o in opt_states(learner)]
    out = {"params": digest(learner.params), "adam": digest(adam)}
    if seeds > 1:
        out["per_seed_params"] = [
            digest(jax.tree.map(lambda x, s=s: x[s], learner.params)) for s in range(seeds)
        ]
    return out


CASES = {
    "ppo_1seed": lambda: (make_ppo(PPOConfig(), "CartPole-v1"), 1024, 1),
    "ppo_3seeds_on_done": lambda: (
        make_ppo(PPOConfig(num_seeds=3), "CartPole-v1", reset_strategy="on_done"),
        1024,
        3,
    ),
    "dqn_1seed": lambda: (make_dqn(DQNConfig(learning_starts=200), "CartPole-v1"), 1000, 1),
    "dqn_3seeds_on_done": lambda: (
        make_dqn(
            DQNConfig(learning_starts=200, num_seeds=3), "CartPole-v1", reset_strategy="on_done"
        ),
        1000,
        3,
    ),
    "sac_1seed": lambda: (make_sac(SACConfig(), "Pendulum-v1"), 512, 1),
    "sac_3seeds_on_done": lambda: (
        make_sac(SACConfig(num_seeds=3), "Pendulum-v1", reset_strategy="on_done"),
        512,
        3,
    ),
    # Presets of each kind of network and replay, a few updates each (their own budgets set
    # the schedules, which the few steps trained here only begin).
    "ppo_recurrent_gru": lambda: (
        make_ppo(PPO_PRESETS["StatelessCartPole-v1"], "StatelessCartPole-v1"),
        4096,
        1,
    ),
    "ppo_recurrent_lstm_chunks": lambda: (
        make_ppo(
            PPO_PRESETS["StatelessCartPole-v1"].replace(
                recurrent="lstm", chunk_length=8, burn_in=4
            ),
            "StatelessCartPole-v1",
        ),
        4096,
        1,
    ),
    "ppo_pixels": lambda: (make_ppo(PPO_PRESETS["PixelCartPole-v1"], "PixelCartPole-v1"), 2048, 1),
    "ppo_dict_pixels_augmented": lambda: (
        make_ppo(
            PPOConfig(num_envs=8, num_steps=32, augment_pixels=True, encoder_layer_norm=True),
            "Maze-v0",
            pixels=True,
        ),
        512,
        1,
    ),
    "ppo_minatar_breakout": lambda: (
        make_ppo(PPO_PRESETS["gymnax/Breakout-MinAtar"], "gymnax/Breakout-MinAtar"),
        8192,
        1,
    ),
    "ppo_pendulum_normalized": lambda: (
        make_ppo(PPO_PRESETS["Pendulum-v1"], "Pendulum-v1"),
        4096,
        1,
    ),
    "dqn_prioritized_nstep": lambda: (
        make_dqn(
            DQNConfig(learning_starts=200, prioritized=True, n_step=3, max_grad_norm=10.0),
            "CartPole-v1",
        ),
        1000,
        1,
    ),
    "dqn_recurrent_gru": lambda: (
        make_dqn(
            DQN_PRESETS["RepeatPrevious-v0"].replace(learning_starts=320), "RepeatPrevious-v0"
        ),
        640,
        1,
    ),
    "dqn_minatar_compact": lambda: (
        make_dqn(
            DQN_PRESETS["gymnax/Breakout-MinAtar"].replace(learning_starts=512),
            "gymnax/Breakout-MinAtar",
        ),
        1024,
        1,
    ),
    "dqn_dict_pixels": lambda: (
        make_dqn(DQNConfig(learning_starts=150, batch_size=32), "Maze-v0", pixels=True),
        300,
        1,
    ),
    "sac_mountaincar_correlated": lambda: (
        make_sac(
            SAC_PRESETS["MountainCarContinuous-v0"].replace(learning_starts=256),
            "MountainCarContinuous-v0",
        ),
        512,
        1,
    ),
    "pqn_1seed": lambda: (make_pqn(PQNConfig(), "CartPole-v1"), 2048, 1),
    "pqn_3seeds_preset": lambda: (
        make_pqn(PQN_PRESETS["CartPole-v1"].replace(num_seeds=3), "CartPole-v1"),
        2048,
        3,
    ),
    "pqn_recurrent_gru": lambda: (
        make_pqn(PQNConfig(recurrent="gru"), "StatelessCartPole-v1"),
        2048,
        1,
    ),
    "td3_1seed": lambda: (make_td3(TD3Config(learning_starts=256), "Pendulum-v1"), 512, 1),
    "td3_3seeds_on_done": lambda: (
        make_td3(
            TD3Config(learning_starts=256, num_seeds=3), "Pendulum-v1", reset_strategy="on_done"
        ),
        512,
        3,
    ),
}


def main() -> None:
    chosen = sys.argv[1:] or list(CASES)  # names of CASES, or every case
    results = {}
    for name in chosen:
        build = CASES[name]
        agent, steps, seeds = build()
        results[name] = fingerprint(agent, steps, seeds)
        print(name, results[name], flush=True)
    emit({"rollax": rollax.__version__, "fingerprints": results})


if __name__ == "__main__":
    main()
