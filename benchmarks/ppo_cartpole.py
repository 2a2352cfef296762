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

import argparse
import json
import sys
import tempfile
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from _common import FiveValueStep, Timed, median_of, median_seconds, use_compilation_cache

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


# ---------------------------------------------------------------------------- rollax


def rollax_solver(
    seed: int, num_seeds: int, total: int, chunk: int, episodes: int
) -> dict[str, Any]:
    """Compile rollax's PPO and train in chunks until every seed is solved."""
    from rollax.agents.ppo import PPOConfig, make_ppo

    config = PPOConfig(
        **SETTINGS,
        total_steps=total,
        lr_schedule="constant",
        num_seeds=num_seeds,
        hidden_sizes=(64, 64),
        activation="tanh",
    )
    with Timed() as compile_time:
        agent = make_ppo(config, "CartPole-v1")
        # Compile initialization, the training chunk (the same program for any number of
        # updates) and the evaluator side by side, then initialize.
        agent.warmup([(episodes, False)])
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
    """Train chunk by chunk (timed), evaluating after each (not timed).

    Stops at the first evaluation where every seed's mean return is >= 475 (``solved``);
    a batch of seeds trains the whole budget and also reports the time for all of it.
    """
    train_seconds, steps, worst, solved_seeds = 0.0, 0, [], 0
    solved_per_chunk, train_s_per_chunk = [], []
    key = jax.random.key(10_000 + seed)
    solved_at = solved_train_s = None
    while steps < total:
        with Timed() as t:
            state = jax.block_until_ready(run_chunk(state))
        train_seconds += t.seconds
        steps += chunk
        key, k = jax.random.split(key)
        returns = np.asarray(evaluate(state, k))  # (seeds, episodes)
        means = returns.reshape(-1, returns.shape[-1]).mean(axis=-1)
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


def _rejax_ppo(total: int) -> tuple[Any, Any, Any]:
    """rejax's PPO with the shared settings, training ``total`` steps per ``train`` call
    without its built-in evaluation (evaluated outside, like rollax)."""
    import gymnax
    from rejax import PPO

    env, env_params = gymnax.make("CartPole-v1")
    env = FiveValueStep(env)
    algo = PPO.create(
        env=env,
        env_params=env_params,
        agent_kwargs={"activation": "tanh", "hidden_layer_sizes": (64, 64)},
        **SETTINGS,
        total_timesteps=total,
        eval_freq=total,
        skip_initial_evaluation=True,
    )
    algo = algo.replace(eval_callback=lambda algo, ts, rng: jnp.zeros(()))
    return algo, env, env_params


def rejax_solver(
    seed: int, num_seeds: int, total: int, chunk: int, episodes: int
) -> dict[str, Any]:
    """Compile rejax's PPO and train in chunks (``vmap`` over seeds) until all are solved."""
    from rejax.evaluate import evaluate

    algo, env, env_params = _rejax_ppo(chunk)
    horizon = int(env_params.max_steps_in_episode)

    def chunk_fn(ts):
        return algo.train(train_state=ts)[0]

    def eval_fn(ts, key):
        return evaluate(algo.make_act(ts), key, env, env_params, episodes, horizon)[1]

    keys = jax.random.split(jax.random.key(seed), num_seeds)
    with Timed() as compile_time:
        init = jax.jit(jax.vmap(algo.init_state)).lower(keys).compile()
        ts = init(keys)
        run = jax.jit(jax.vmap(chunk_fn)).lower(ts).compile()
        ev = jax.jit(jax.vmap(eval_fn, in_axes=(0, None))).lower(ts, jax.random.key(0))
        ev = ev.compile()
    return _solve(run, ev, ts, compile_time.seconds, total, chunk, seed)


# ---------------------------------------------------------------------------- throughput


def throughput(repeats: int, steps: int) -> dict[str, float]:
    """Training env steps/s, same hyperparameters, one seed, after compiling."""
    from rollax.agents.ppo import PPOConfig, make_ppo

    results = {}
    config = PPOConfig(
        **SETTINGS,
        total_steps=steps,
        lr_schedule="constant",
        hidden_sizes=(64, 64),
        activation="tanh",
    )
    agent = make_ppo(config, "CartPole-v1")
    state = agent.init(jax.random.key(0))
    results["rollax"] = steps / median_seconds(lambda: agent.run(state, steps), repeats)

    algo, _, _ = _rejax_ppo(steps)
    ts = jax.jit(algo.init_state)(jax.random.key(0))
    run = jax.jit(lambda ts: algo.train(train_state=ts)[0])
    results["rejax"] = steps / median_seconds(lambda: run(ts), repeats)
    return results


# ---------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3, help="independent single-seed runs")
    parser.add_argument("--total-steps", type=int, default=100_000)
    parser.add_argument("--chunk", type=int, default=5_000, help="steps between evaluations")
    parser.add_argument("--episodes", type=int, default=64, help="evaluation episodes")
    parser.add_argument("--batch-seeds", type=int, default=8, help="seeds trained at once")
    parser.add_argument("--repeats", type=int, default=5, help="throughput repeats")
    parser.add_argument("--throughput-steps", type=int, default=50_000)
    args = parser.parse_args()

    print(f"jax {jax.__version__} on {jax.devices()[0].platform}; rejax's environment is "
          "adapted to gymnax 1.0's 6-value step (done = terminated or truncated).")  # fmt: skip
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

    summary = {
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
            "rollax": report[f"rollax_{args.batch_seeds}seeds"]["total_s"],
            "rejax": report[f"rejax_{args.batch_seeds}seeds"]["total_s"],
        },
    }
    ratios = {}
    t = summary["median_total_s_to_solve"]
    b = summary["batch_total_s_whole_budget"]
    if t["rejax"] and t["rollax"]:
        ratios["time_to_solve"] = t["rollax"] / t["rejax"]
    if t["rejax"] and t["rollax_warm_cache"]:
        ratios["time_to_solve_warm_cache"] = t["rollax_warm_cache"] / t["rejax"]
    if b["rejax"] and b["rollax"]:
        ratios[f"time_for_budget_{args.batch_seeds}_seeds"] = b["rollax"] / b["rejax"]
    ratios["throughput"] = tput["rollax"] / tput["rejax"]
    summary["ratios_rollax_over_rejax"] = ratios
    report["summary"] = summary
    for k, v in ratios.items():
        print(f"rollax/rejax {k}: {v:.2f}")
    print(json.dumps(report))


def _print_run(name: str, label: str, run: dict[str, Any]) -> None:
    if run["solved"]:
        print(f"{name:6s} {label}: solved after {run['steps_to_solve']:,} steps; compile "
              f"{run['compile_s']:.2f} s + training {run['train_s_to_solve']:.2f} s = "
              f"{run['total_s_to_solve']:.2f} s", flush=True)  # fmt: skip
    else:
        print(f"{name:6s} {label}: not solved within the budget (compile "
              f"{run['compile_s']:.2f} s)", flush=True)  # fmt: skip
    sys.stdout.flush()


if __name__ == "__main__":
    main()
