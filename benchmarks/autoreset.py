"""What fresh resets cost: every reset strategy against no reset, cached resets and gymnax.

For CartPole-v1 and Maze-v0 at each batch size, in one process:
  * steps/s with no reset at all (autoreset disabled);
  * steps/s with ``cached`` (Brax's behaviour, not fresh) and each fresh strategy
    (``every_step``, ``on_done``, ``compact``, ``pool``), all in same-step autoreset mode;
  * CartPole only: gymnax's CartPole-v1 under ``vmap`` (a reset computed every step);
  * the floor: the faster of no reset and cached (neither computes a reset; without resets
    CartPole drifts past termination to large angles where sin/cos cost more, so there the
    cached rollout is the true floor);
  * the per-environment reset cost (batched resets of the whole batch inside a jitted scan,
    divided by their number) and its ratio to the per-environment step cost;
  * for each fresh strategy, its overhead over the floor next to the unavoidable overhead:
    (episodes that finished in the rollout) x (per-environment reset cost). The target for
    the default strategy is overhead <= 1.25 x unavoidable + 10% of the floor time.

Every rollax variant runs the same precomputed table of random actions (gymnax one drawn from
the same distribution) inside one jitted ``lax.scan``. Figures are medians over ``--repeats``
timed runs after a warm-up (compilation excluded). The last line printed is one JSON object
with every figure.

Usage:
    python benchmarks/autoreset.py [--sizes 256 4096] [--repeats 5] [--steps 500]
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

import rollax
from _common import median_seconds, rollax_rollout
from _harness import Parser, banner, emit, jax_info
from _peers import gymnax_rollout
from rollax.envs import RESET_STRATEGIES

FRESH = [s for s in RESET_STRATEGIES if s != "cached"]


def _actions(env: rollax.VecEnv, num_steps: int) -> jax.Array:
    """Uniformly random actions, ``(num_steps, num_envs, ...)``, the same for every variant."""
    return jax.vmap(env.sample_actions)(jax.random.split(jax.random.key(1), num_steps))


def time_rollax(env_id: str, n: int, steps: int, repeats: int, **make_kwargs) -> dict:
    """Seconds per rollout of ``steps`` steps, and the number of episodes that finished."""
    env = rollax.make(env_id, num_envs=n, **make_kwargs)
    run = rollax_rollout(env, _actions(env, steps))
    seconds = median_seconds(run, repeats)
    episodes = int(run()[1])
    return {"seconds": seconds, "episodes": episodes, "steps_per_s": steps * n / seconds}


def reset_cost(env_id: str, n: int, repeats: int, rounds: int = 20) -> float:
    """Seconds per environment of a fresh reset: ``rounds`` batched resets of ``n``
    environments inside one jitted scan (no dispatch overhead), divided by ``rounds * n``."""
    env = rollax.make(env_id, num_envs=n, autoreset_mode="disabled", reset_strategy="every_step")

    @jax.jit
    def many_resets(key):
        def body(total, key):
            _, ts = env.reset(key)
            return total + ts.obs.sum(), None

        return jax.lax.scan(body, jnp.zeros(()), jax.random.split(key, rounds))[0]

    seconds = median_seconds(lambda: many_resets(jax.random.key(3)), repeats)
    return seconds / (rounds * n)


def bench(env_id: str, n: int, steps: int, repeats: int) -> dict:
    no_reset = time_rollax(env_id, n, steps, repeats, autoreset_mode="disabled")
    cached = time_rollax(env_id, n, steps, repeats, reset_strategy="cached")
    # The floor: the faster of no reset and cached (no reset work, only a select). Without
    # resets CartPole drifts past termination to large angles where sin/cos cost more, so
    # there the cached rollout is the true floor.
    floor = min(no_reset, cached, key=lambda r: r["seconds"])
    per_reset = reset_cost(env_id, n, repeats)
    row: dict = {
        "no_reset_steps_per_s": no_reset["steps_per_s"],
        "floor_steps_per_s": floor["steps_per_s"],
        "reset_seconds_per_env": per_reset,
        "step_seconds_per_env": floor["seconds"] / (steps * n),
    }
    row["reset_step_cost_ratio"] = per_reset / row["step_seconds_per_env"]
    for strategy in ["cached", *FRESH]:
        if strategy == "cached":
            result = cached
        else:
            result = time_rollax(env_id, n, steps, repeats, reset_strategy=strategy)
        overhead = result["seconds"] - floor["seconds"]
        unavoidable = result["episodes"] * per_reset
        row[strategy] = {
            "steps_per_s": result["steps_per_s"],
            "episodes": result["episodes"],
            "overhead_s": overhead,
            "unavoidable_overhead_s": unavoidable,
            "overhead_over_unavoidable": overhead / unavoidable if unavoidable else None,
            # The target's bound: 1.25 x unavoidable + 10% of the floor time.
            "overhead_bound_s": 1.25 * unavoidable + 0.10 * floor["seconds"],
        }
        row[strategy]["within_bound"] = overhead <= row[strategy]["overhead_bound_s"]
    if env_id == "CartPole-v1":
        run = gymnax_rollout("CartPole-v1", n, steps)
        row["gymnax_steps_per_s"] = steps * n / median_seconds(run, repeats)
    return row


def main() -> None:
    parser = Parser(__doc__)
    parser.add_argument("--envs", nargs="+", default=["CartPole-v1", "Maze-v0"])
    parser.sizes(256, 4096).repeats(5)
    args = parser.steps(500, help="steps per timed rollout").parse_args()
    banner()

    results: dict = {}
    for env_id in args.envs:
        for n in args.sizes:
            row = bench(env_id, n, args.steps, args.repeats)
            # The default depends on the environment, the batch size and the backend.
            default = row["default_strategy"] = rollax.make(env_id, num_envs=n).reset_strategy
            results[f"{env_id}/{n}"] = row
            print(
                f"\n{env_id} num_envs={n}: no reset {row['no_reset_steps_per_s']:,.0f} steps/s, "
                f"floor {row['floor_steps_per_s']:,.0f} steps/s; "
                f"a reset costs {row['reset_step_cost_ratio']:.1f}x a step"
            )
            for strategy in ["cached", *FRESH]:
                r = row[strategy]
                ratio = r["overhead_over_unavoidable"]
                print(
                    f"  {strategy:>10}: {r['steps_per_s']:>13,.0f} steps/s | "
                    f"vs floor {r['steps_per_s'] / row['floor_steps_per_s']:.2f} | "
                    f"overhead {r['overhead_s'] * 1e3:7.1f} ms vs unavoidable "
                    f"{r['unavoidable_overhead_s'] * 1e3:6.1f} ms "
                    f"({'n/a' if ratio is None else f'{ratio:.2f}x'}) | "
                    f"bound {'met' if r['within_bound'] else 'MISSED'}"
                )
            d = row[default]
            print(
                f"  default ({default}) vs every_step: "
                f"{d['steps_per_s'] / row['every_step']['steps_per_s']:.2f}x",
                end="",
            )
            if "gymnax_steps_per_s" in row:
                print(
                    f" | vs gymnax ({row['gymnax_steps_per_s']:,.0f} steps/s): "
                    f"{d['steps_per_s'] / row['gymnax_steps_per_s']:.2f}x",
                    end="",
                )
            print(flush=True)
    emit(
        {
            "benchmark": "autoreset",
            "unit": "steps/s",
            **jax_info(),
            "steps": args.steps,
            "repeats": args.repeats,
            "results": results,
        }
    )


if __name__ == "__main__":
    main()
