"""DQN and PQN on CartPole-v1, SAC and TD3 on Pendulum-v1: time to threshold and throughput,
rollax against rejax.

Both libraries train with rejax's own settings for these tasks (its
``configs/gymnax/cartpole.yaml`` and ``pendulum.yaml``):

* DQN, CartPole-v1: dueling double DQN, swish 64x64, 10 environments, buffer 50,000,
  learning starts 5,000, batch 100, each gradient element clipped to [-10, 10], Adam 1e-3,
  5 gradient steps after each vectorized step, Polyak 0.98 once per vectorized step,
  epsilon 1 to 0.05 over half of 100,000 steps, gamma 0.99, squared TD error. rollax:
  ``DQNConfig()`` (its defaults are these settings).
* SAC, Pendulum-v1: swish 64x64, 1 environment, buffer 10,000, learning starts 256,
  batch 256, Adam 1e-2, one gradient step per environment step, Polyak 0.98, target
  entropy -1, normalized observations, 10,000 steps. rollax: ``PRESETS["Pendulum-v1"]``.
* TD3, Pendulum-v1: swish 64x64, 1 environment, buffer 10,000, learning starts 1,000,
  batch 100, Adam 1e-3 with gradients bounded at norm 100, Polyak 0.95, exploration noise
  0.3, target noise 0.2 clipped at 0.5, actor every 2 critic steps, normalized
  observations, 10,000 steps. rollax: ``PRESETS["Pendulum-v1"]`` of TD3.
* PQN, CartPole-v1 (Q-learning like DQN, on rollouts of many environments with no replay
  buffer): relu 64x64 with layer normalization, 16 environments x 128 steps, 5 epochs of 16
  minibatches, Adam 3e-4, gradients bounded at 10 (rejax clips each element, rollax bounds
  the norm), epsilon 1 to 0.05 over half of 524,288 steps, gamma 0.99, lambda 0.9. rollax:
  ``PRESETS["CartPole-v1"]`` of PQN, its own settings (its defaults are rejax's; the preset
  takes 2 epochs of 8 minibatches at Adam 1e-3 annealed linearly to 0).

rejax 0.1.3 was written for gymnax's old 5-value ``step``; its environment is wrapped to
return ``done = terminated or truncated`` (what rejax expected: its targets cannot tell a
time limit from a termination, one of the things rollax fixes).

Method, identical for both libraries: compile initialization, the training chunk and the
evaluator first (timed: "compile"), then train in chunks of ``--<algo>-chunk`` environment
steps (timed), evaluating after each chunk (``--episodes`` episodes, not timed; each
library's own evaluation policy: rollax acts greedily, rejax with its ``make_act``: epsilon
0.005 for DQN and PQN, a sampled action for SAC). Time to threshold =
compile + training time up to the first evaluation whose mean return reaches the threshold
(475 on CartPole, -250 on Pendulum); it is also given without compile, and for rollax with
a warm persistent compilation cache (the same run again: a second ``rollax train`` of a
configuration compiles from the cache runs keep by default). rejax trains a chunk
as its own ``train`` does between two evaluations (``train_iteration`` in a ``fori_loop``)
with ``total_timesteps`` set to the whole budget, so its epsilon schedule is its own.
Throughput: environment steps per second of training after compiling, learning included
(the buffer already past ``learning starts``; PQN has none), median of ``--repeats``.

The last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from typing import Any

import jax

from _common import Timed, median_seconds, train_in_chunks, use_compilation_cache
from _harness import Parser, banner, emit, median_of, ratio
from _peers import rejax_agent, rejax_chunk, rejax_programs
from returns import REJAX_PQN  # rejax's own PQN settings for CartPole (configs/gymnax)

DQN_REJAX = dict(
    agent="DuelingQNetwork",
    agent_kwargs={"activation": "swish"},
    num_envs=10,
    buffer_size=50_000,
    fill_buffer=5_000,
    batch_size=100,
    max_grad_norm=10.0,
    learning_rate=1e-3,
    num_epochs=5,
    polyak=0.98,
    eps_start=1.0,
    eps_end=0.05,
    exploration_fraction=0.5,
    gamma=0.99,
    ddqn=True,
)
SAC_REJAX = dict(
    agent_kwargs={"activation": "swish"},
    num_envs=1,
    buffer_size=10_000,
    fill_buffer=256,
    batch_size=256,
    learning_rate=1e-2,
    num_epochs=1,
    target_update_freq=1,
    polyak=0.98,
    gamma=0.99,
    normalize_observations=True,
)
TD3_REJAX = dict(
    actor_kwargs={"activation": "swish"},
    critic_kwargs={"activation": "swish"},
    num_envs=1,
    buffer_size=10_000,
    fill_buffer=1_000,
    batch_size=100,
    learning_rate=1e-3,
    num_epochs=1,
    gamma=0.99,
    polyak=0.95,
    max_grad_norm=100.0,
    exploration_noise=0.3,
    target_noise=0.2,
    target_noise_clip=0.5,
    policy_delay=2,
    normalize_observations=True,
)
TASKS = {
    "dqn": {"env": "CartPole-v1", "threshold": 475.0, "total": 100_000, "rejax": DQN_REJAX},
    "sac": {"env": "Pendulum-v1", "threshold": -250.0, "total": 10_000, "rejax": SAC_REJAX},
    "td3": {"env": "Pendulum-v1", "threshold": -250.0, "total": 10_000, "rejax": TD3_REJAX},
    "pqn": {
        "env": "CartPole-v1",
        "threshold": 475.0,
        "total": 524_288,
        "rejax": REJAX_PQN["CartPole-v1"],
    },
}


# ---------------------------------------------------------------------------- rollax
def rollax_config(algo: str) -> Any:
    """rollax's configuration: its preset (rejax's settings but for PQN's), the task's budget."""
    from rollax.runs import get_algorithm

    preset = get_algorithm(algo).config_for(TASKS[algo]["env"])
    return preset.replace(total_steps=TASKS[algo]["total"])


def rollax_agent(algo: str, config: Any) -> Any:
    from rollax.runs import get_algorithm

    return get_algorithm(algo).make(config, TASKS[algo]["env"])


def rollax_solver(algo: str, seed: int, chunk: int, episodes: int) -> dict[str, Any]:
    """Compile rollax's agent, then train chunk by chunk until the threshold."""
    config = rollax_config(algo)
    with Timed() as compile_time:
        agent = rollax_agent(algo, config)
        agent.warmup([episodes])
        state = jax.block_until_ready(agent.init(jax.random.key(seed)))
    return _solve(
        lambda s: agent.run(s, chunk)[0],
        lambda s, k: agent.evaluate(s, k, episodes, True),
        state,
        compile_time.seconds,
        TASKS[algo],
        chunk,
        seed,
    )


# ---------------------------------------------------------------------------- rejax
def rejax_algo(algo: str) -> Any:
    """rejax's agent with its settings for the task, on gymnax's environment."""
    task = TASKS[algo]
    return rejax_agent(algo, task["env"], task["rejax"], task["total"])


def rejax_solver(algo: str, seed: int, chunk: int, episodes: int) -> dict[str, Any]:
    """Compile rejax's agent, then train chunk by chunk until the threshold. rejax trains a
    chunk as its own ``train`` does between two evaluations (``rejax_chunk``), with
    ``total_timesteps`` the whole budget, so its epsilon schedule is its own."""
    key = jax.random.key(seed)[None]  # one seed: the programs map over a batch of one
    programs = rejax_programs(rejax_algo(algo), key, chunk, episodes)
    return _solve(
        programs.chunk, programs.evaluate, programs.state, programs.compile_s, TASKS[algo],
        chunk, seed,
    )  # fmt: skip


# ---------------------------------------------------------------------------- shared
def _solve(run_chunk, evaluate, state, compile_seconds, task, chunk, seed) -> dict[str, Any]:
    """Train chunk by chunk (timed), evaluating after each (not timed: ``train_in_chunks``),
    until the mean evaluation return reaches the task's threshold or the budget is spent."""
    steps, train_seconds, curve = 0, 0.0, []
    solved_at = solved_train_s = None
    for steps, train_seconds, returns in train_in_chunks(
        run_chunk, evaluate, state, task["total"], chunk, seed
    ):
        curve.append(float(returns.mean()))
        if curve[-1] >= task["threshold"]:
            solved_at, solved_train_s = steps, train_seconds
            break
    return {
        "solved": solved_at is not None,
        "steps_to_threshold": solved_at,
        "compile_s": compile_seconds,
        "train_s_to_threshold": solved_train_s,
        "total_s_to_threshold": None if solved_at is None else compile_seconds + solved_train_s,
        "trained_steps": steps,
        "train_s": train_seconds,
        "return_per_chunk": curve,
    }


def throughput(algo: str, steps: int, repeats: int) -> dict[str, float]:
    """Training environment steps/s with learning on, one seed, after compiling."""
    task = TASKS[algo]
    warm = task["rejax"].get("fill_buffer", 0)  # PQN learns from its first rollout
    results = {}

    config = rollax_config(algo)
    agent = rollax_agent(algo, config)
    state = agent.init(jax.random.key(0))
    prefill = -(-warm // config.steps_per_iteration) * config.steps_per_iteration
    if prefill:
        state = jax.block_until_ready(agent.run(state, prefill)[0])
    results["rollax"] = steps / median_seconds(lambda: agent.run(state, steps), repeats)

    ragent = rejax_algo(algo)
    ts = jax.jit(ragent.init_state)(jax.random.key(0))
    if prefill:
        ts = jax.block_until_ready(jax.jit(rejax_chunk(ragent, prefill))(ts))
    run = jax.jit(rejax_chunk(ragent, steps))
    moved = int(jax.block_until_ready(run(ts)).global_step - ts.global_step)
    if moved != steps:  # the chunk's iterations counted in the wrong unit
        raise RuntimeError(f"rejax's chunk of {steps:,} steps trained {moved:,}")
    results["rejax"] = steps / median_seconds(lambda: run(ts), repeats)
    return results


def _print_run(name: str, label: str, run: dict[str, Any]) -> None:
    if run["solved"]:
        print(f"  {name:6s} {label}: threshold after {run['steps_to_threshold']:,} steps; "
              f"compile {run['compile_s']:.2f} s + training {run['train_s_to_threshold']:.2f} s"
              f" = {run['total_s_to_threshold']:.2f} s", flush=True)  # fmt: skip
    else:
        print(f"  {name:6s} {label}: threshold not reached in {run['trained_steps']:,} steps "
              f"(compile {run['compile_s']:.2f} s, last {run['return_per_chunk'][-1]:.1f})",
              flush=True)  # fmt: skip


def bench(algo: str, args: argparse.Namespace) -> dict[str, Any]:
    """Every figure of one algorithm."""
    task = TASKS[algo]
    chunk = getattr(args, f"{algo}_chunk")
    print(f"{algo.upper()} on {task['env']}: threshold {task['threshold']}, chunks of {chunk:,}")
    report: dict[str, Any] = {}
    cache = tempfile.mkdtemp(prefix="rollax-bench-cache-")
    for name, solver in (("rejax", rejax_solver), ("rollax", rollax_solver)):
        runs = []
        for seed in range(args.seeds):
            jax.clear_caches()
            # Cold runs compile everything; rollax's also fill a persistent cache of their
            # own (as `rollax train` does), read by the warm runs below.
            use_compilation_cache(f"{cache}/{seed}" if name == "rollax" else None)
            runs.append(solver(algo, seed, chunk, args.episodes))
            _print_run(name, f"seed {seed}", runs[-1])
        report[name] = runs
    # Warm cache: the same programs again, read from the persistent cache (a second run).
    warm = []
    for seed in range(args.seeds):
        jax.clear_caches()
        use_compilation_cache(f"{cache}/{seed}")
        warm.append(rollax_solver(algo, seed, chunk, args.episodes))
        _print_run("rollax", f"seed {seed}, warm cache", warm[-1])
    report["rollax_warm_cache"] = warm
    use_compilation_cache(None)
    tput = throughput(algo, getattr(args, f"{algo}_tput_steps"), args.repeats)
    report["throughput_steps_per_s"] = tput
    summary: dict[str, Any] = {"seeds_reaching_threshold": {}, "median_s_to_threshold": {}}
    for name in ("rollax", "rollax_warm_cache", "rejax"):
        runs = report[name]
        summary["seeds_reaching_threshold"][name] = sum(r["solved"] for r in runs)
        summary["median_s_to_threshold"][name] = {
            "with_compile": median_of(runs, "total_s_to_threshold"),
            "without_compile": median_of(runs, "train_s_to_threshold"),
            "compile": statistics.median(r["compile_s"] for r in runs),
        }
    median_s = summary["median_s_to_threshold"]
    r, j, w = median_s["rollax"], median_s["rejax"], median_s["rollax_warm_cache"]
    ratios = {
        "throughput": tput["rollax"] / tput["rejax"],
        "time_to_threshold_with_compile": ratio(r["with_compile"], j["with_compile"]),
        "time_to_threshold_without_compile": ratio(r["without_compile"], j["without_compile"]),
        "compile": ratio(r["compile"], j["compile"]),
        "time_to_threshold_warm_cache": ratio(w["with_compile"], j["with_compile"]),
    }
    ratios = {k: v for k, v in ratios.items() if v is not None}
    summary["ratios_rollax_over_rejax"] = ratios
    report["summary"] = summary
    print(f"  throughput: rollax {tput['rollax']:,.0f} steps/s, rejax {tput['rejax']:,.0f} "
          f"steps/s")  # fmt: skip
    for key, value in ratios.items():
        print(f"  rollax/rejax {key}: {value:.2f}", flush=True)
    return report


def main() -> None:
    parser = Parser(__doc__).choice("--algos", TASKS).seeds(3, help="independent single-seed runs")
    parser.episodes(16).repeats(3, help="throughput repeats")
    for algo, chunk, tput_steps in (("dqn", 2_500, 20_000), ("sac", 500, 2_000),
                                    ("td3", 500, 2_000), ("pqn", 16_384, 65_536)):  # fmt: skip
        name, total = algo.upper(), TASKS[algo]["total"]
        parser.add_argument(f"--{algo}-chunk", type=int, default=chunk, help="steps between evals")
        parser.add_argument(f"--{algo}-total", type=int, help=f"{name} budget (default {total:,})")
        parser.add_argument(f"--{algo}-tput-steps", type=int, default=tput_steps)
    args = parser.parse_args()
    banner("rejax's environments are adapted to gymnax 1.0's 6-value step "
           "(done = terminated or truncated)")  # fmt: skip
    report: dict[str, Any] = {"args": vars(args), "rejax_settings": {}}
    for algo in args.algos:
        total = getattr(args, f"{algo}_total")
        if total is not None:  # a smaller budget for both libraries (a smoke test)
            TASKS[algo]["total"] = total
        report["rejax_settings"][algo] = TASKS[algo]["rejax"]
        report[algo] = bench(algo, args)
    emit(report)


if __name__ == "__main__":
    main()
