"""PPO on CartPole-v1: time to solve and training throughput, rollax against rejax.

Both train with rejax's own CartPole settings (tanh, 64x64, num_envs 5, num_steps 100,
5 epochs, 5 minibatches, lr 7.5e-4 constant, max_grad_norm 0.5, gamma 0.99, lambda 0.95,
clip 0.2, ent_coef 0.01, budget 100k steps); rejax on gymnax's CartPole-v1.

rejax 0.1.3 was written for gymnax's old 5-value ``step``; gymnax 1.0 returns 6 values
(``terminated`` and ``truncated`` apart), so rejax's environment is wrapped to return
``done = terminated or truncated`` (what rejax expected; its value bootstrap cannot tell the
two apart, one of the things rollax fixes).

Method, identical for both: the training program runs in chunks of ``--chunk`` environment
steps; after each chunk the policy is evaluated (stochastic actions, ``--episodes`` episodes,
outside the timed training). Time to solve = compile time (training chunk, initialization and
evaluator, compiled before training starts: rejax ahead of time, rollax with
``agent.warmup``, which compiles them side by side) +
training time of the chunks up to the first evaluation
with a mean return >= 475. With 8 seeds at once (one ``vmap``ped program for each library),
both train the whole budget and the figure is compile + training time (how many seeds solved
is reported beside it). "Warm cache" repeats rollax with JAX's persistent
compilation cache already filled (in-process caches cleared). Throughput: environment steps
per second of training chunks after compiling, median over ``--repeats``.

The last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import tempfile
from typing import Any

import jax

from _common import Timed, median_seconds, train_in_chunks, use_compilation_cache
from _harness import Parser, banner, emit, median_of, ratio
from _peers import rejax_agent, rejax_chunk, rejax_programs

SETTINGS = dict(
    num_envs=5,
    num_steps=100,
    num_epochs=5,
    num_minibatches=5,
    learning_rate=7.5e-4,
    max_grad_norm=0.5,
    gamma=0.99,
    gae_lambda=0.95,
    clip_eps=0.2,
    ent_coef=0.01,
    vf_coef=0.5,
)
SOLVED = 475.0
REJAX_NETWORK = {"activation": "tanh", "hidden_layer_sizes": (64, 64)}
"""rejax's networks in the shared settings (rollax's: ``hidden_sizes``, ``activation``)."""


# ---------------------------------------------------------------------------- rollax


def rollax_config(total: int, num_seeds: int = 1) -> Any:
    """rollax's PPO with the shared settings for ``total`` steps per seed."""
    from rollax.agents.ppo import PPOConfig

    return PPOConfig(
        **SETTINGS,
        total_steps=total,
        lr_schedule="constant",
        num_seeds=num_seeds,
        hidden_sizes=(64, 64),
        activation="tanh",
    )


def rollax_solver(
    seed: int, num_seeds: int, total: int, chunk: int, episodes: int
) -> dict[str, Any]:
    """Compile rollax's PPO and train in chunks until every seed is solved."""
    from rollax.agents.ppo import make_ppo

    with Timed() as compile_time:
        agent = make_ppo(rollax_config(total, num_seeds), "CartPole-v1")
        # Compile initialization, the training chunk (the same program for any number of
        # updates) and the evaluator side by side, then initialize.
        agent.warmup([episodes])
        state = jax.block_until_ready(agent.init(jax.random.key(seed)))
    return _solve(
        lambda s: agent.run(s, chunk)[0],
        lambda s, k: agent.evaluate(s, k, episodes, False),
        state,
        compile_time.seconds,
        total,
        chunk,
        seed,
    )


def _solve(run_chunk, evaluate, state, compile_seconds, total, chunk, seed) -> dict[str, Any]:
    """Train chunk by chunk (timed), evaluating after each (not timed: ``train_in_chunks``).

    Stops at the first evaluation where every seed's mean return is >= 475 (``solved``);
    a batch of seeds trains the whole budget and also reports the time for all of it.
    """
    worst, solved_per_chunk, train_s_per_chunk = [], [], []
    steps, train_seconds, solved_seeds = 0, 0.0, 0
    solved_at = solved_train_s = None
    for steps, train_seconds, returns in train_in_chunks(
        run_chunk, evaluate, state, total, chunk, seed
    ):
        means = returns.reshape(-1, returns.shape[-1]).mean(axis=-1)  # (seeds,)
        worst.append(float(means.min()))
        solved_seeds = int((means >= SOLVED).sum())
        solved_per_chunk.append(solved_seeds)
        train_s_per_chunk.append(train_seconds)
        if solved_at is None and solved_seeds == means.size:
            solved_at, solved_train_s = steps, train_seconds
            if means.size == 1:
                break
    return {
        "solved": solved_at is not None,
        "steps_to_solve": solved_at,
        "compile_s": compile_seconds,
        "train_s_to_solve": solved_train_s,
        "total_s_to_solve": None if solved_at is None else compile_seconds + solved_train_s,
        "trained_steps": steps,
        "train_s": train_seconds,
        "total_s": compile_seconds + train_seconds,
        "seeds_solved_at_end": solved_seeds,
        "worst_seed_return_per_chunk": worst,
        "seeds_solved_per_chunk": solved_per_chunk,
        "train_s_per_chunk": train_s_per_chunk,
    }


# ---------------------------------------------------------------------------- rejax


def rejax_ppo(total: int) -> Any:
    """rejax's PPO with the shared settings on gymnax's CartPole-v1 for ``total`` steps,
    its own evaluation off (evaluated outside, like rollax)."""
    return rejax_agent("ppo", "CartPole-v1", {"agent_kwargs": REJAX_NETWORK, **SETTINGS}, total)


def rejax_solver(
    seed: int, num_seeds: int, total: int, chunk: int, episodes: int
) -> dict[str, Any]:
    """Compile rejax's PPO and train in chunks (``vmap`` over seeds) until all are solved."""
    keys = jax.random.split(jax.random.key(seed), num_seeds)
    programs = rejax_programs(rejax_ppo(total), keys, chunk, episodes)
    return _solve(
        programs.chunk, programs.evaluate, programs.state, programs.compile_s, total, chunk, seed
    )


# ---------------------------------------------------------------------------- throughput


def throughput(repeats: int, steps: int) -> dict[str, float]:
    """Training env steps/s, same hyperparameters, one seed, after compiling."""
    from rollax.agents.ppo import make_ppo

    results = {}
    agent = make_ppo(rollax_config(steps), "CartPole-v1")
    state = agent.init(jax.random.key(0))
    results["rollax"] = steps / median_seconds(lambda: agent.run(state, steps), repeats)

    algo = rejax_ppo(steps)
    ts = jax.jit(algo.init_state)(jax.random.key(0))
    run = jax.jit(rejax_chunk(algo, steps))
    results["rejax"] = steps / median_seconds(lambda: run(ts), repeats)
    return results


# ---------------------------------------------------------------------------- main


def main() -> None:
    parser = Parser(__doc__).seeds(3, help="independent single-seed runs")
    parser.add_argument("--total-steps", type=int, default=100_000)
    parser.add_argument("--chunk", type=int, default=5_000, help="steps between evaluations")
    parser.episodes(64)
    parser.add_argument("--batch-seeds", type=int, default=8, help="seeds trained at once")
    parser.repeats(5, help="throughput repeats")
    parser.add_argument("--throughput-steps", type=int, default=50_000)
    args = parser.parse_args()

    banner("rejax's environment is adapted to gymnax 1.0's 6-value step "
           "(done = terminated or truncated)")  # fmt: skip
    report: dict[str, Any] = {"settings": SETTINGS, "args": vars(args)}

    cache = tempfile.mkdtemp(prefix="rollax-bench-cache-")
    for name, solver in (("rejax", rejax_solver), ("rollax", rollax_solver)):
        runs = []
        for seed in range(args.seeds):
            jax.clear_caches()
            # Cold runs compile everything; rollax's also fill a persistent cache of their
            # own (as `rollax train` does), read by the warm runs below.
            use_compilation_cache(f"{cache}/{seed}" if name == "rollax" else None)
            runs.append(solver(seed, 1, args.total_steps, args.chunk, args.episodes))
            _print_run(name, f"seed {seed}", runs[-1])
        report[f"{name}_1seed"] = runs
    # Warm cache: the same programs again, compiled programs read from the persistent cache.
    warm = []
    for seed in range(args.seeds):
        jax.clear_caches()
        use_compilation_cache(f"{cache}/{seed}")
        warm.append(rollax_solver(seed, 1, args.total_steps, args.chunk, args.episodes))
        _print_run("rollax", f"seed {seed}, warm cache", warm[-1])
    report["rollax_1seed_warm_cache"] = warm
    use_compilation_cache(None)

    for name, solver in (("rejax", rejax_solver), ("rollax", rollax_solver)):
        jax.clear_caches()
        run = solver(0, args.batch_seeds, args.total_steps, args.chunk, args.episodes)
        print(f"{name:6s} {args.batch_seeds} seeds at once: compile {run['compile_s']:.2f} s + "
              f"training {run['trained_steps']:,} steps {run['train_s']:.2f} s = "
              f"{run['total_s']:.2f} s; {run['seeds_solved_at_end']} seeds solved at the end"
              + (f", all solved after {run['steps_to_solve']:,} steps" if run["solved"] else ""),
              flush=True)  # fmt: skip
        report[f"{name}_{args.batch_seeds}seeds"] = run

    tput = throughput(args.repeats, args.throughput_steps)
    report["throughput_steps_per_s"] = tput
    print(f"training throughput, one seed: rollax {tput['rollax']:,.0f} steps/s, rejax "
          f"{tput['rejax']:,.0f} steps/s, ratio {tput['rollax'] / tput['rejax']:.2f}")  # fmt: skip
    report["summary"] = summary(report, warm, args.batch_seeds)
    for k, v in report["summary"]["ratios_rollax_over_rejax"].items():
        print(f"rollax/rejax {k}: {v:.2f}")
    emit(report)


def summary(report: dict[str, Any], warm: list[dict], batch_seeds: int) -> dict[str, Any]:
    """Whether every seed solved, the median time to solve (cold and warm cache), the batch's
    time for the whole budget, and their ratios rollax / rejax (where both have one)."""
    out: dict[str, Any] = {
        "all_seeds_solved": {
            "rollax": all(r["solved"] for r in report["rollax_1seed"]),
            "rejax": all(r["solved"] for r in report["rejax_1seed"]),
        },
        "median_total_s_to_solve": {
            "rollax": median_of(report["rollax_1seed"], "total_s_to_solve"),
            "rollax_warm_cache": median_of(warm, "total_s_to_solve"),
            "rejax": median_of(report["rejax_1seed"], "total_s_to_solve"),
        },
        "batch_total_s_whole_budget": {
            "rollax": report[f"rollax_{batch_seeds}seeds"]["total_s"],
            "rejax": report[f"rejax_{batch_seeds}seeds"]["total_s"],
        },
    }
    t, b = out["median_total_s_to_solve"], out["batch_total_s_whole_budget"]
    tput = report["throughput_steps_per_s"]
    ratios = {
        "time_to_solve": ratio(t["rollax"], t["rejax"]),
        "time_to_solve_warm_cache": ratio(t["rollax_warm_cache"], t["rejax"]),
        f"time_for_budget_{batch_seeds}_seeds": ratio(b["rollax"], b["rejax"]),
        "throughput": tput["rollax"] / tput["rejax"],
    }
    out["ratios_rollax_over_rejax"] = {k: v for k, v in ratios.items() if v is not None}
    return out


def _print_run(name: str, label: str, run: dict[str, Any]) -> None:
    if run["solved"]:
        print(f"{name:6s} {label}: solved after {run['steps_to_solve']:,} steps; compile "
              f"{run['compile_s']:.2f} s + training {run['train_s_to_solve']:.2f} s = "
              f"{run['total_s_to_solve']:.2f} s", flush=True)  # fmt: skip
    else:
        print(f"{name:6s} {label}: not solved within the budget (compile "
              f"{run['compile_s']:.2f} s)", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
