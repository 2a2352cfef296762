"""Recurrent PPO on CartPole without velocities, beside feed-forward PPO with stacked frames.

``StatelessCartPole-v1`` observes the cart's position and the pole's angle only: a policy
must remember earlier observations to know which way things move. This file trains, from
rollax's public API:

- recurrent PPO (``PPOConfig(recurrent="gru")``): a GRU between the encoder and the heads,
  whose carry resets at every episode start;
- feed-forward PPO on the last 4 observations stacked (``frame_stack=4``), what one tries
  first without memory;

then plays one episode by hand with the trained recurrent policy, threading its carry and
the ``first`` flags the way the training rollout does.

    python examples/recurrent_ppo.py --total-steps 524288

Prints each run's evaluation mean (the last line: ``eval_return=<recurrent mean>``).
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import rollax
from rollax.agents.ppo import PRESETS, make_ppo

ENV = "StatelessCartPole-v1"


def play_one_episode(agent, state, seed: int) -> float:
    """One episode with the recurrent policy, acting step by step from the host.

    The policy's carry starts fresh (``init_carry``); ``first`` is set on the episode's
    first observation only, which is where a recurrent policy resets its carry.
    """
    env = rollax.make(ENV, num_envs=1, autoreset_mode="disabled")
    env_state, ts = env.reset(jax.random.key(seed))
    carry = agent.policy.init_carry(state, 1)  # leaves (num_seeds, 1, ...)
    first = jnp.ones((1, 1), bool)
    act = jax.jit(agent.policy.act, static_argnums=5)
    total, key = 0.0, jax.random.key(seed + 1)
    while True:
        key, act_key = jax.random.split(key)
        obs = ts.obs[None]  # (num_seeds=1, 1, 2)
        action, carry = act(state, obs, carry, first, act_key, True)
        env_state, ts = env.step(env_state, action[0])
        total += float(ts.reward[0])
        first = jnp.zeros((1, 1), bool)
        if bool(ts.done[0]):
            return total


def main() -> None:
    """Train both, evaluate both, then play one episode by hand."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total-steps", type=int, default=PRESETS[ENV].total_steps)
    parser.add_argument("--eval-episodes", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    recurrent = PRESETS[ENV].replace(total_steps=args.total_steps)
    stacked = recurrent.replace(recurrent="none", frame_stack=4, hidden_sizes=(64, 64))
    results = {}
    for name, config in (("feed-forward, 4 frames", stacked), ("recurrent", recurrent)):
        agent = make_ppo(config, ENV)
        start = time.perf_counter()
        state = agent.init(jax.random.key(args.seed))
        state, _ = agent.run(state, config.total_steps)
        returns = agent.evaluate(state, jax.random.key(args.seed + 1), args.eval_episodes)
        results[name] = float(np.mean(returns))
        print(f"{name:>24}: eval return {results[name]:6.1f} ({time.perf_counter() - start:.0f} s)")
    print(f"one episode by hand: {play_one_episode(agent, state, args.seed):.0f}")
    print(f"eval_return={results['recurrent']:.1f}")


if __name__ == "__main__":
    main()
