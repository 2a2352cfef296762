"""Steps per second through the Gymnasium adapter: numpy actions in, numpy results out.

Compared, at each size, with Gymnasium's own numpy-vectorized CartPole (its
``vector_entry_point``, ``gymnasium.make_vec(..., vectorization_mode="vector_entry_point")``)
and with gymnax's ``GymnaxToVectorGymWrapper`` over gymnax's CartPole. Every variant steps
with the same table of random numpy actions; each timed run is ``--steps`` calls of
``step`` after a reset (and one untimed warm-up run, which compiles); medians over
``--repeats``. rollax runs in its default NEXT_STEP mode and in SAME_STEP (which also builds
``info["final_obs"]``).

Then TorchRL: rollax's ``RollaxEnv`` against TorchRL's ``GymWrapper`` over Gymnasium's
``SyncVectorEnv`` of CartPole in DISABLED mode (the fastest Gymnasium vector env TorchRL's
wrapper accepts: it rejects the numpy ``vector_entry_point`` CartPole, which has no
``autoreset_mode`` attribute), each timed as ``env.rollout(--torchrl-steps,
break_when_any_done=False)`` with TorchRL's random policy.

``--parts gymnasium torchrl`` picks the comparisons to run (both by default).

The last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np


def _timed(run: Callable[[], Any], repeats: int) -> float:
    run()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _loop(env: Any, actions: np.ndarray, to_actions: Callable = lambda a: a) -> Callable:
    def run() -> None:
        env.reset(seed=0)
        for action in actions:
            out = env.step(to_actions(action))
        np.asarray(out[0])  # results are ready (JAX variants) before the clock stops

    return run


def rollax_gymnasium(num_envs: int, mode: str) -> Any:
    from rollax.adapters.gymnasium import make_vec

    return make_vec("CartPole-v1", num_envs, autoreset_mode=mode)


def gymnasium_numpy(num_envs: int) -> Any:
    import gymnasium

    return gymnasium.make_vec("CartPole-v1", num_envs, vectorization_mode="vector_entry_point")


def gymnax_wrapper(num_envs: int) -> Any:
    import gymnax
    from gymnax.wrappers.gym import GymnaxToVectorGymWrapper

    env, params = gymnax.make("CartPole-v1")
    return GymnaxToVectorGymWrapper(env, num_envs=num_envs, params=params, seed=0)


def torchrl_envs(num_envs: int) -> dict[str, Any]:
    """rollax's TorchRL adapter and TorchRL's GymWrapper over SyncVectorEnv (DISABLED)."""
    import warnings

    import gymnasium
    from gymnasium.vector import AutoresetMode, SyncVectorEnv

    with warnings.catch_warnings():  # TorchRL's own deprecations, raised while it imports
        warnings.simplefilter("ignore", DeprecationWarning)
        from torchrl.envs import GymWrapper

        from rollax.adapters.torchrl import RollaxEnv

    sync = SyncVectorEnv(
        [lambda: gymnasium.make("CartPole-v1") for _ in range(num_envs)],
        autoreset_mode=AutoresetMode.DISABLED,
    )
    return {
        "rollax_torchrl": RollaxEnv("CartPole-v1", num_envs),
        "torchrl_gym_sync": GymWrapper(sync),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 4096])
    parser.add_argument("--steps", type=int, default=200, help="step calls per timed run")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--torchrl-steps", type=int, default=50, help="steps per TorchRL rollout")
    parser.add_argument("--parts", nargs="+", default=["gymnasium", "torchrl"],
                        choices=["gymnasium", "torchrl"])  # fmt: skip
    args = parser.parse_args()

    import jax.numpy as jnp

    results: dict[str, dict[str, float]] = {}
    for n in args.sizes if "gymnasium" in args.parts else []:
        actions = np.random.default_rng(0).integers(0, 2, (args.steps, n)).astype(np.int64)
        variants = {
            "rollax_next_step": (rollax_gymnasium(n, "next_step"), lambda a: a),
            "rollax_same_step": (rollax_gymnasium(n, "same_step"), lambda a: a),
            "gymnasium_numpy": (gymnasium_numpy(n), lambda a: a),
            # gymnax's wrapper passes actions to its jitted step as given.
            "gymnax_wrapper": (gymnax_wrapper(n), lambda a: jnp.asarray(a, jnp.int32)),
        }
        row = {}
        for name, (env, convert) in variants.items():
            seconds = _timed(_loop(env, actions, convert), args.repeats)
            row[name] = args.steps * n / seconds
        row["ratio_vs_gymnasium_numpy"] = row["rollax_next_step"] / row["gymnasium_numpy"]
        row["ratio_vs_gymnax_wrapper"] = row["rollax_next_step"] / row["gymnax_wrapper"]
        results[f"CartPole-v1/{n}"] = row
        print(f"CartPole-v1 num_envs={n} (steps/s through the Gymnasium API)")
        for name in variants:
            print(f"  {name:18s} {row[name]:>14,.0f}")
        print(f"  rollax/gymnasium numpy {row['ratio_vs_gymnasium_numpy']:.2f}x, "
              f"rollax/gymnax wrapper {row['ratio_vs_gymnax_wrapper']:.2f}x")  # fmt: skip
    torchrl_results: dict[str, dict[str, float]] = {}
    for n in args.sizes if "torchrl" in args.parts else []:
        row = {}
        for name, env in torchrl_envs(n).items():
            seconds = _timed(
                lambda env=env: env.rollout(args.torchrl_steps, break_when_any_done=False),
                args.repeats,
            )
            row[name] = args.torchrl_steps * n / seconds
        row["ratio_vs_torchrl_gym_sync"] = row["rollax_torchrl"] / row["torchrl_gym_sync"]
        torchrl_results[f"CartPole-v1/{n}"] = row
        print(f"CartPole-v1 num_envs={n} (steps/s through TorchRL rollouts)")
        print(f"  rollax_torchrl     {row['rollax_torchrl']:>14,.0f}")
        print(f"  torchrl_gym_sync   {row['torchrl_gym_sync']:>14,.0f}")
        print(f"  rollax/TorchRL GymWrapper {row['ratio_vs_torchrl_gym_sync']:.2f}x")
    report = {"benchmark": "adapters", "args": vars(args), "results": results}
    print(json.dumps({**report, "torchrl_results": torchrl_results}))


if __name__ == "__main__":
    main()
