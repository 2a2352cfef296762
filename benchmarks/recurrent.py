"""Recurrent agents on memory tasks: final return, time to threshold and throughput, rollax's
recurrent PPO against memorax 1.0.1's, and rollax's recurrent DQN (R2D2).

Three partially observed tasks, ``--seeds`` seeds one after the other (each compiling
afresh: ``jax.clear_caches()``), every agent of a task on the same budget:

==========================  ==========  =========  ====================================
task                        budget      threshold  episode
==========================  ==========  =========  ====================================
StatelessCartPole-v1        1,048,576   450        CartPole without velocities, 500 max
gymnax/MemoryChain-bsuite   262,144     0.9        6 steps: recall one bit after 5
RepeatPrevious-v0 (DQN)     80,000      0.9        51 cards: name the suit 4 cards ago
==========================  ==========  =========  ====================================

MemoryChain's return is +1 (the bit recalled) or -1 (wrong); 0.9 is "solved": 95% of the
episodes right, with sampled actions (a memoryless policy gets 0). RepeatPrevious returns 1
when every suit is named right, -0.5 on average for a guess.

Agents:

- ``rollax gru``: ``rollax.agents.ppo.PRESETS[task]`` where rollax has a preset for the task,
  else ``PPOConfig(recurrent="gru", cell_size=64, hidden_sizes=(64,), num_envs=8,
  num_steps=128)`` (rollax's other defaults: 4 epochs of 4 minibatches, lr 2.5e-3 annealed,
  gamma 0.99, lambda 0.95, clip 0.2, entropy 0.01); ``total_steps`` is the budget.
- ``rollax ff`` and ``rollax ff_stack4``: the same configuration feed-forward
  (``recurrent="none"``, hidden layers 64x64), on the last observation or the last 4 stacked
  (``frame_stack=4``): what one tries first without memory.
- On RepeatPrevious, the agents are DQN's: ``rollax gru`` is
  ``rollax.agents.dqn.PRESETS["RepeatPrevious-v0"]`` (recurrent DQN, sequences of 10 after a
  burn-in of 5), ``rollax ff`` the same feed-forward; their final return is greedy (DQN's
  evaluation), and memorax does not run there.
- ``memorax gru``: memorax 1.0.1's PPO (``memorax.algorithms.PPO``) with its own GRU
  example's network and settings (``benchmarks/_memorax_worker.py`` lists them), on gymnax's
  ``MemoryChain-bsuite`` (memorax's ``make("gymnax::MemoryChain-bsuite")``) and on rollax's
  StatelessCartPole dynamics behind gymnax's ``Environment`` interface (the 500-step limit
  folded into ``done``, as gymnax's CartPole does; memorax treats every ``done`` as final).

memorax 1.0.1 requires wandb and neptune-scale (protobuf < 7, which rollax's constraints
exclude), so it never enters rollax's environment: on first use this script creates
``benchmarks/.venv/memorax`` (ignored by git), pip installs memorax with exact pins there
(``MEMORAX_PINS``; jax, flax, optax, numpy... at the versions of the running interpreter, so
that both sides compile with the same XLA), and runs memorax in a subprocess with that
interpreter (``_memorax_worker.py``, one JSON line back). gymnax is 0.0.9 there, the version
memorax 1.0.1 locks and the last with the 5-value ``step`` memorax unpacks; its MemoryChain
has the dynamics of gymnax 1.0.1's, which rollax reaches through its gymnax adapter.

Method, identical for every agent:

- **compile**: building the agent and compiling initialization, the training chunk and the
  evaluator, before training (rollax: ``make_ppo``, ``warmup``, ``init``; memorax: its jitted
  ``init``, ``train`` and ``evaluate`` lowered and compiled ahead of time).
- **training** in chunks of ``--chunk`` environment steps (timed, ``block_until_ready``),
  the whole budget. After each chunk (not timed) the mean return of the training episodes
  that ended in it: rollax's ``metrics["episode_return"]``; for memorax, the returns summed
  from its training transitions' rewards and ``done`` flags, carried across chunks.
- **time to threshold**: compile + training time up to the end of the first chunk whose
  training return reaches the threshold (also without compile).
- **throughput**: environment steps per second of training (budget / training time).
- **final return**: the mean return of ``--episodes`` (64) whole episodes of the final
  policy with sampled actions, each library's own evaluator (rollax ``agent.evaluate``,
  memorax ``PPO.evaluate`` over one episode's horizon with 64 environments, the first
  episode of each).

Each task reports medians over seeds and the ratios rollax / memorax (time to threshold
over the seeds that reached it). The last line printed is one JSON object with every
figure.

What differs by design, and is reported beside the figures: the networks (memorax's example
has separate actor and critic, each an MLP and two GRU + feed-forward residual blocks:
about 117k parameters; rollax's shares one encoder and cell between its heads: ``num_params``
in each summary), so throughput compares the libraries as their recurrent examples ship.
memorax does not bootstrap at StatelessCartPole's time limit (gymnax folds it into ``done``);
rollax does. memorax's ``train`` returns its transitions reshaped as ``(updates * envs,
steps)`` from memory laid out ``(updates, steps, envs)`` (its own episode statistics then
mix environments whenever ``num_envs != num_steps``); this script reads them in memory
order, time-major.

Usage:
    python benchmarks/recurrent.py [--tasks TASK ...] [--seeds 3] [--episodes 64]
        [--steps N --chunk N]  # override the budget and chunk (a smoke test, not the table)
        [--skip-memorax] [--variants gru ff ff_stack4]  # ff_stack4: PPO's tasks only
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import jax
import numpy as np

from _common import Timed
from _harness import Parser, banner, emit, median_of

BENCH_DIR = Path(__file__).resolve().parent
REPO_SRC = BENCH_DIR.parent / "src"
MEMORAX_VENV = BENCH_DIR / ".venv" / "memorax"  # ".venv/" is in .gitignore
WORKER = BENCH_DIR / "_memorax_worker.py"
MEMORAX_BATCH = 8 * 128  # memorax's rollout: 8 environments x 128 steps

TASKS: dict[str, dict[str, Any]] = {
    "StatelessCartPole-v1": {"threshold": 450.0, "budget": 1_048_576, "chunk": 16_384,
                             "horizon": 500},
    "gymnax/MemoryChain-bsuite": {"threshold": 0.9, "budget": 262_144, "chunk": 4_096,
                                  "horizon": 6},
    "RepeatPrevious-v0": {"threshold": 0.9, "budget": 80_000, "chunk": 8_000, "horizon": 51,
                          "agent": "dqn"},
}  # fmt: skip

# memorax and what it needs, pinned exactly. The packages rollax's interpreter also holds
# take its versions (the same jax and XLA on both sides); the versions here are fallbacks.
MEMORAX_PINS = {
    "memorax": "1.0.1",
    "gymnax": "0.0.9",  # memorax 1.0.1's lock: gymnax's 5-value step
    "jax": "0.10.2",
    "jaxlib": "0.10.2",
    "flax": "0.12.8",
    "optax": "0.2.8",
    "chex": "0.1.92",
    "numpy": "2.4.6",
    "distrax": "0.1.9",
    "tfp-nightly": "0.26.0.dev20261027",
    "flashbax": "0.1.3",
    "wandb": "0.31.0",
    "neptune-scale": "0.30.0",
    "protobuf": "6.33.6",
    "tensorboardx": "2.6.5",
}
SHARED = ("jax", "jaxlib", "flax", "optax", "chex", "numpy", "distrax", "tfp-nightly")

VARIANTS = ("gru", "ff", "ff_stack4")


# ---------------------------------------------------------------------------- rollax


def is_dqn_task(task: str) -> bool:
    """Whether ``task`` is trained by DQN (no memorax run) rather than PPO."""
    return TASKS[task].get("agent") == "dqn"


def rollax_configs(task: str, budget: int) -> tuple[dict[str, Any], bool]:
    """Each rollax variant's configuration for ``task``, and whether a preset was found."""
    from rollax.agents.ppo import PRESETS, PPOConfig

    if is_dqn_task(task):
        from rollax.agents.dqn import PRESETS as DQN_PRESETS

        gru = DQN_PRESETS[task].replace(total_steps=budget)
        return {"gru": gru, "ff": gru.replace(recurrent="none")}, True

    preset = PRESETS.get(task)
    gru = preset or PPOConfig(
        recurrent="gru", cell_size=64, hidden_sizes=(64,), num_envs=8, num_steps=128
    )
    if gru.recurrent == "none":
        gru = gru.replace(recurrent="gru")
    gru = gru.replace(total_steps=budget)
    ff = gru.replace(
        recurrent="none", hidden_sizes=(64, 64), chunk_length=0, burn_in=0, frame_stack=1
    )
    return {"gru": gru, "ff": ff, "ff_stack4": ff.replace(frame_stack=4)}, preset is not None


def rollax_seed(
    task: str, config: Any, seed: int, chunk: int, episodes: int, threshold: float
) -> dict[str, Any]:
    """Compile rollax's agent, train the whole budget in chunks, evaluate the final policy
    (sampled actions for PPO, greedy for DQN)."""
    from rollax.agents.dqn import make_dqn
    from rollax.agents.ppo import make_ppo

    jax.clear_caches()
    sampled = not is_dqn_task(task)
    with Timed() as compile_time:
        agent = (make_ppo if sampled else make_dqn)(config, task)
        agent.warmup([episodes])
        state = jax.block_until_ready(agent.init(jax.random.key(seed)))
    num_params = sum(x.size for x in jax.tree.leaves(state.params))
    train_s, steps, curve = 0.0, 0, []
    reached_at = reached_train_s = None
    while steps < config.total_steps:
        with Timed() as t:
            state, metrics = jax.block_until_ready(agent.run(state, chunk))
        train_s += t.seconds
        steps += chunk
        ended = int(np.asarray(metrics["episodes"]).sum())
        mean = float(np.asarray(metrics["episode_return"]).mean()) if ended else None
        curve.append(mean)
        if reached_at is None and mean is not None and mean >= threshold:
            reached_at, reached_train_s = steps, train_s
    returns = agent.evaluate(state, jax.random.key(10_000 + seed), episodes, not sampled)
    return _record(compile_time.seconds, train_s, steps, reached_at, reached_train_s,
                   float(np.asarray(returns).mean()), curve, num_params)  # fmt: skip


def _record(compile_s, train_s, steps, reached_at, reached_train_s, final, curve, num_params):
    return {
        "compile_s": compile_s,
        "train_s": train_s,
        "trained_steps": steps,
        "steps_per_s": steps / train_s,
        "reached": reached_at is not None,
        "steps_to_threshold": reached_at,
        "train_s_to_threshold": reached_train_s,
        "total_s_to_threshold": None if reached_at is None else compile_s + reached_train_s,
        "final_return": final,
        "train_return_per_chunk": curve,
        "num_params": int(num_params),
    }


# ---------------------------------------------------------------------------- memorax


def memorax_pins() -> list[str]:
    """``name==version`` for everything installed in memorax's environment."""
    pins = dict(MEMORAX_PINS)
    for name in SHARED:
        try:
            pins[name] = version(name)
        except PackageNotFoundError:
            pass
    requirements = [f"{name}=={v}" for name, v in pins.items()]
    if jax.default_backend() == "gpu":  # the same accelerator on both sides
        requirements.append(f"jax[cuda12]=={pins['jax']}")
    return requirements


def memorax_python() -> Path:
    """The interpreter of memorax's environment, created and installed on first use."""
    python = MEMORAX_VENV / "bin" / "python"
    marker = MEMORAX_VENV / "rollax-benchmark-pins.txt"
    pins = memorax_pins()
    if python.exists() and marker.exists() and marker.read_text().split() == pins:
        return python
    if not python.exists():
        print(f"creating {MEMORAX_VENV} for memorax", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(MEMORAX_VENV)], check=True)
    print(f"pip install {' '.join(pins)}", flush=True)
    subprocess.run(
        [str(python), "-m", "pip", "install", "--disable-pip-version-check", *pins],
        check=True,
        stdout=sys.stderr,
    )
    marker.write_text("\n".join(pins) + "\n")
    return python


def memorax_runs(task: str, seeds: list[int], chunk: int, budget: int, args) -> dict[str, Any]:
    """Every seed of memorax's GRU PPO on ``task``, in memorax's own interpreter."""
    spec = {
        "task": task,
        "seeds": seeds,
        "budget": budget,
        "chunk": chunk,
        "episodes": args.episodes,
        "threshold": TASKS[task]["threshold"],
        "horizon": TASKS[task]["horizon"],
        "repo_src": str(REPO_SRC),
    }
    out = subprocess.run(
        [str(memorax_python()), str(WORKER), json.dumps(spec)],
        check=True,
        cwd=BENCH_DIR,
        stdout=subprocess.PIPE,
        text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


# ---------------------------------------------------------------------------- report


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians over seeds of one agent's runs."""
    finals = [r["final_return"] for r in runs if r["final_return"] is not None]
    return {
        "seeds_reaching_threshold": sum(r["reached"] for r in runs),
        "median_final_return": statistics.median(finals) if finals else None,
        "median_s_to_threshold": {
            "with_compile": median_of(runs, "total_s_to_threshold"),
            "without_compile": median_of(runs, "train_s_to_threshold"),
        },
        "median_steps_to_threshold": median_of(runs, "steps_to_threshold"),
        "median_steps_per_s": median_of(runs, "steps_per_s"),
        "median_compile_s": median_of(runs, "compile_s"),
        "num_params": runs[0]["num_params"],
    }


def ratios(ours: dict[str, Any], theirs: dict[str, Any]) -> dict[str, float]:
    """rollax / memorax for the figures both have (final return only where both are > 0)."""
    out = {}
    pairs = {
        "final_return": (ours["median_final_return"], theirs["median_final_return"]),
        "time_to_threshold_with_compile": (
            ours["median_s_to_threshold"]["with_compile"],
            theirs["median_s_to_threshold"]["with_compile"],
        ),
        "time_to_threshold_without_compile": (
            ours["median_s_to_threshold"]["without_compile"],
            theirs["median_s_to_threshold"]["without_compile"],
        ),
        "throughput": (ours["median_steps_per_s"], theirs["median_steps_per_s"]),
        "compile": (ours["median_compile_s"], theirs["median_compile_s"]),
    }
    for name, (a, b) in pairs.items():
        if a is not None and b is not None and a > 0 and b > 0:
            out[name] = a / b
    return out


def _fmt(value: float | None) -> str:
    return "none" if value is None else f"{value:.3g}"


def _print_run(name: str, label: str, run: dict[str, Any]) -> None:
    reached = (
        f"threshold after {run['steps_to_threshold']:,} steps, compile {run['compile_s']:.1f} s"
        f" + training {run['train_s_to_threshold']:.1f} s = {run['total_s_to_threshold']:.1f} s"
        if run["reached"]
        else f"threshold not reached in {run['trained_steps']:,} steps (compile "
        f"{run['compile_s']:.1f} s)"
    )
    print(f"  {name:18s} {label}: final return {_fmt(run['final_return'])}; {reached}; "
          f"{run['steps_per_s']:,.0f} steps/s", flush=True)  # fmt: skip


def plan(task: str, args: argparse.Namespace, configs: dict[str, Any]) -> tuple[int, int]:
    """The chunk and budget: a chunk is a whole number of every agent's rollouts, the
    budget a whole number of chunks."""
    peer = () if is_dqn_task(task) else (MEMORAX_BATCH,)
    # Environment steps per iteration: PPO's rollout batch, DQN's num_envs * train_every.
    per_iteration = [getattr(c, "steps_per_iteration", c.batch_size) for c in configs.values()]
    unit = math.lcm(*peer, *per_iteration)
    budget = args.steps or TASKS[task]["budget"]
    chunk = max(unit, round(min(args.chunk or TASKS[task]["chunk"], budget) / unit) * unit)
    return chunk, max(chunk, budget // chunk * chunk)


def bench(task: str, args: argparse.Namespace) -> dict[str, Any]:
    """Every figure of one task."""
    threshold = TASKS[task]["threshold"]
    configs, preset = rollax_configs(task, TASKS[task]["budget"])
    chunk, budget = plan(task, args, configs)
    configs = {k: c.replace(total_steps=budget) for k, c in configs.items()}
    print(f"{task}: budget {budget:,} steps in chunks of {chunk:,}, threshold {threshold}; "
          f"rollax {'preset' if preset else 'fallback configuration (no preset)'}",
          flush=True)  # fmt: skip
    seeds = list(range(args.seeds))
    report: dict[str, Any] = {
        "budget": budget,
        "chunk": chunk,
        "threshold": threshold,
        "rollax_preset": preset,
        "rollax_configs": {k: str(c) for k, c in configs.items() if k in args.variants},
        "runs": {},
    }
    for variant in [v for v in args.variants if v in configs]:
        runs = []
        for seed in seeds:
            runs.append(rollax_seed(task, configs[variant], seed, chunk, args.episodes,
                                    threshold))  # fmt: skip
            _print_run(f"rollax {variant}", f"seed {seed}", runs[-1])
        report["runs"][f"rollax_{variant}"] = runs
    if not args.skip_memorax and not is_dqn_task(task):
        memorax = memorax_runs(task, seeds, chunk, budget, args)
        report["memorax"] = {k: v for k, v in memorax.items() if k != "runs"}
        report["runs"]["memorax_gru"] = memorax["runs"]
        for seed, run in zip(seeds, memorax["runs"], strict=True):
            _print_run("memorax gru", f"seed {seed}", run)
        if memorax["backend"] != jax.default_backend():
            print(f"  WARNING: memorax ran on {memorax['backend']}, rollax on "
                  f"{jax.default_backend()}", flush=True)  # fmt: skip
    summary = {name: summarize(runs) for name, runs in report["runs"].items()}
    if "memorax_gru" in summary:
        summary["ratios_rollax_over_memorax"] = {
            name.removeprefix("rollax_"): ratios(s, summary["memorax_gru"])
            for name, s in summary.items()
            if name.startswith("rollax_")
        }
    report["summary"] = summary
    for name, s in summary.items():
        if name.startswith("ratios"):
            continue
        t = s["median_s_to_threshold"]["with_compile"]
        print(f"  {name:18s} median: final return {_fmt(s['median_final_return'])}, "
              f"{s['seeds_reaching_threshold']}/{len(seeds)} seeds reach {threshold}"
              + (f" in {t:.1f} s" if t is not None else "")
              + f", {s['median_steps_per_s']:,.0f} steps/s, {s['num_params']:,} parameters",
              flush=True)  # fmt: skip
    for variant, r in summary.get("ratios_rollax_over_memorax", {}).items():
        print(f"  rollax {variant} / memorax gru: "
              + ", ".join(f"{k} {v:.2f}" for k, v in r.items()), flush=True)  # fmt: skip
    return report


def main() -> None:
    parser = Parser(__doc__).choice("--tasks", TASKS)
    parser.seeds(3, help="seeds 0..N-1, one after another")
    parser.steps(None, help="budget of every task (default: the table's)")
    parser.add_argument("--chunk", type=int, help="steps between training-return readings")
    parser.episodes(64, help="final evaluation episodes")
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS),
                        help="rollax's agents")  # fmt: skip
    parser.add_argument("--skip-memorax", action="store_true", help="rollax's agents only")
    args = parser.parse_args()
    banner()
    report: dict[str, Any] = {"args": vars(args), "tasks": {}}
    for task in args.tasks:
        report["tasks"][task] = bench(task, args)
    emit(report)


if __name__ == "__main__":
    main()
