"""Steps per second of batched CartPole-v1: rollax next to gymnax and Gymnasium.

Measured, side by side in one process:
  * rollax, same-step autoreset with fresh resets (the default);
  * rollax with no reset at all (autoreset disabled): the floor a reset strategy can reach;
  * gymnax CartPole-v1 under ``vmap`` with its own autoreset (a reset computed every step);
  * Gymnasium's numpy vectorized CartPole (``vectorization_mode="vector_entry_point"``).

The JAX variants run ``num_steps`` steps inside one jitted ``lax.scan`` whose actions come
from a precomputed random table (the same table for rollax and gymnax), so the figure is the
environment's throughput, not the policy's. Each figure is the median of ``--repeats`` runs
after one warm-up (compilation excluded). The last line printed is one JSON object.

Usage:
    python benchmarks/env_step.py [--sizes 1 256 4096] [--repeats 5] [--steps 1000]
"""

from __future__ import annotations

import numpy as np

import rollax
from _common import median_seconds, random_actions, rollax_rollout
from _harness import Parser, banner, emit, jax_info
from _peers import gymnax_rollout


def bench_rollax(num_envs: int, num_steps: int, repeats: int, autoreset_mode: str) -> float:
    env = rollax.make("CartPole-v1", num_envs=num_envs, autoreset_mode=autoreset_mode)
    run = rollax_rollout(env, random_actions(num_steps, num_envs))
    return num_steps * num_envs / median_seconds(run, repeats)


def bench_gymnax(num_envs: int, num_steps: int, repeats: int) -> float:
    run = gymnax_rollout("CartPole-v1", num_envs, num_steps)
    return num_steps * num_envs / median_seconds(run, repeats)


def bench_gymnasium(num_envs: int, num_steps: int, repeats: int) -> float:
    import gymnasium as gym

    envs = gym.make_vec("CartPole-v1", num_envs=num_envs, vectorization_mode="vector_entry_point")
    rng = np.random.default_rng(0)
    actions = rng.integers(0, 2, size=(num_steps, num_envs))
    envs.reset(seed=0)

    def run() -> None:
        for t in range(num_steps):
            envs.step(actions[t])

    rate = num_steps * num_envs / median_seconds(run, repeats)
    envs.close()
    return rate


def main() -> None:
    parser = Parser(__doc__).sizes(1, 256, 4096).repeats(5)
    args = parser.steps(1000, help="steps per timed rollout").parse_args()
    banner()

    results: dict[str, dict[str, float]] = {}
    for n in args.sizes:
        steps = args.steps if n > 1 else args.steps * 10
        row = {
            "rollax_same_step": bench_rollax(n, steps, args.repeats, "same_step"),
            "rollax_no_reset": bench_rollax(n, steps, args.repeats, "disabled"),
            "gymnax_autoreset": bench_gymnax(n, steps, args.repeats),
            "gymnasium_numpy": bench_gymnasium(n, max(steps // 10, 100), args.repeats),
        }
        row["ratio_rollax_vs_gymnax"] = row["rollax_same_step"] / row["gymnax_autoreset"]
        row["ratio_rollax_vs_gymnasium"] = row["rollax_same_step"] / row["gymnasium_numpy"]
        row["ratio_rollax_vs_no_reset"] = row["rollax_same_step"] / row["rollax_no_reset"]
        results[str(n)] = row
        print(
            f"num_envs={n:>5}: rollax same-step {row['rollax_same_step']:>12,.0f}/s | "
            f"no reset {row['rollax_no_reset']:>12,.0f}/s | "
            f"gymnax {row['gymnax_autoreset']:>12,.0f}/s | "
            f"gymnasium {row['gymnasium_numpy']:>12,.0f}/s | "
            f"rollax/gymnax {row['ratio_rollax_vs_gymnax']:.2f} | "
            f"rollax/gymnasium {row['ratio_rollax_vs_gymnasium']:.2f}",
            flush=True,
        )
    emit(
        {
            "benchmark": "env_step",
            "env": "CartPole-v1",
            "unit": "steps/s",
            **jax_info(),
            "repeats": args.repeats,
            "results": results,
        }
    )


if __name__ == "__main__":
    main()
