"""Population-based training against the best point of a grid, at equal compute.

Two arms per task, each one compiled program of the same 8 members trained for the same
environment steps per member, started from the same 8 points of a learning-rate x entropy
grid (4 x 2) and the same run seed:

- **grid**: ``--sweep learning_rate=... --sweep ent_coef=...``: every point keeps its values;
- **PBT**: the same sweep with ``--pbt-interval``, exploring both fields within bounds.

Both arms are scored the same way, so that neither is judged on its training episodes: the
member with the best training metric (its mean ``metrics.csv`` return over the last tenth
of the rows) is chosen, then evaluated on ``--episodes`` fresh episodes with its sampled
actions (a key of its own per repeat). ``--repeats`` independent repeats per arm (run seeds
0, 1, ...) give the IQM of each arm with its 95% stratified bootstrap interval, the
difference PBT - grid and the probability that a PBT repeat beats a grid repeat. Wall time
per arm: everything ``rollax.runs.train`` does (compiling, each arm from scratch with no
persistent cache, training, checkpoints, the population's steps and pictures), the median
over repeats, and the ratio PBT / grid.

Both arms spread their members over the devices as the command line does (``devices="auto"``:
each CPU core a device, or every GPU).

Tasks:

- ``breakout``: ``gymnax/Breakout-MinAtar`` (rollax's preset), 1,048,576 steps per member;
- ``maze``: ``Maze-v0`` (a 9 x 9 grid) with the curriculum of ``examples/maze_curriculum.py``
  (the start moves away from the goal as the chunks' returns reach 0.3): a task whose
  difficulty changes under the learner, where a schedule can matter. Evaluated at the
  hardest stage.

Targets: PBT's IQM at least the best grid point's, at most 1.1x its wall time. The interval
is reported whichever way it falls. Last line: one JSON object with every figure.

    python benchmarks/pbt.py [--tasks breakout maze] [--repeats 5] [--episodes 64] [--tiny]

``--tiny`` trains a few thousand steps per member, for a check that the script runs; its
arms share compiled programs, so its timings mean nothing.
"""

from __future__ import annotations

import dataclasses
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import numpy as np

import rollax
from _common import use_compilation_cache
from _harness import Parser, emit
from rollax import stats
from rollax.agents.ppo import PRESETS, PPOConfig
from rollax.runs import RunConfig, load_run, train
from rollax.runs._run_dir import read_metrics

LEARNING_RATES = ("1e-4", "3e-4", "1e-3", "3e-3")
ENTROPY = ("0.001", "0.01")
BOUNDS = ("learning_rate=3e-5,1e-2", "ent_coef=1e-4,0.05")
MAZE_STAGES = (1, 2, 4, 6)
"""The maze's ``min_goal_distance`` stages, easiest first (examples/maze_curriculum.py)."""


@dataclasses.dataclass(frozen=True)
class Task:
    """One task of the benchmark: what both arms train, and how they are evaluated.

    Attributes:
        env: The environment id.
        config: PPO's configuration (its budget is ``total_steps``), without the sweep.
        env_options: The environment's constructor options.
        env_params: The environment's params at the start.
        interval: PBT's steps per member between two steps.
        callback: Called after each logged chunk (a curriculum), or ``None``.
        final_params: ``env_params -> env_params`` to evaluate with (the hardest stage).
    """

    env: str
    config: PPOConfig
    env_options: tuple[str, ...] = ()
    env_params: tuple[str, ...] = ()
    interval: int = 0
    callback: Callable[[Any, dict], None] | None = None
    final_params: Callable[[Any], Any] = lambda params: params


def _curriculum(run: Any, row: dict) -> None:
    """The maze's next stage once a chunk's episodes averaged a return of 0.3."""
    params = run.state.env_params
    stage = MAZE_STAGES.index(int(params.min_goal_distance))
    solved = row["episode_return"] != "" and float(row["episode_return"]) >= 0.3
    if solved and stage + 1 < len(MAZE_STAGES):
        farther = params.replace(min_goal_distance=MAZE_STAGES[stage + 1])
        run.state = run.state.replace(env_params=farther)


def tasks(tiny: bool) -> dict[str, Task]:
    """The benchmark's tasks at full size, or tiny."""
    breakout = PRESETS["gymnax/Breakout-MinAtar"]
    maze = PPOConfig(num_envs=64, num_steps=32, hidden_sizes=(128, 128))

    def budget(config: PPOConfig, steps: int, interval: int) -> tuple[PPOConfig, int]:
        """Full size, or tiny: 4 iterations, a PBT step every one."""
        if not tiny:
            return config.replace(total_steps=steps), interval
        return config.replace(total_steps=4 * config.batch_size), config.batch_size

    breakout, breakout_interval = budget(breakout, 1_048_576, 131_072)
    maze, maze_interval = budget(maze, 524_288, 65_536)
    return {
        "breakout": Task(
            env="gymnax/Breakout-MinAtar", config=breakout, interval=breakout_interval
        ),
        "maze": Task(
            env="Maze-v0",
            config=maze,
            env_options=("size=4",),
            env_params=(f"min_goal_distance={MAZE_STAGES[0]}",),
            interval=maze_interval,
            callback=_curriculum,
            final_params=lambda p: p.replace(min_goal_distance=MAZE_STAGES[-1]),
        ),
    }


def _chosen(run_dir: Path, members: int) -> int:
    """The member with the best mean return over the last tenth of ``metrics.csv``'s rows."""
    fields, rows = read_metrics(run_dir / "metrics.csv")
    columns = [f for f in fields if f.startswith("episode_return[")][:members]
    tail = rows[-max(1, len(rows) // 10) :]
    means = []
    for column in columns:
        values = [float(r[column]) for r in tail if r[column] != ""]
        means.append(np.mean(values) if values else -np.inf)
    return int(np.argmax(means))


def run_arm(
    task: Task, pbt: bool, seed: int, episodes: int, root: Path, cold: bool = True
) -> dict[str, Any]:
    """One repeat of one arm: its wall time, the chosen member and its evaluated return.

    ``cold``: the arm compiles from scratch (its time includes every compile). ``--tiny``
    runs warm: the PBT arm reuses the grid arm's programs, since tiny timings mean nothing.
    """
    config = task.config.replace(
        num_seeds=1,
        devices="auto",  # the members spread over the cores (or the GPUs), as the CLI's
        sweep=(f"learning_rate={','.join(LEARNING_RATES)}", f"ent_coef={','.join(ENTROPY)}"),
    )
    run_dir = root / f"{'pbt' if pbt else 'grid'}-{seed}"
    run_config = RunConfig(
        env=task.env,
        env_options=task.env_options,
        env_params=task.env_params,
        seed=seed,
        run_dir=str(run_dir),
        eval_episodes=0,
        progress=False,
        pbt_interval=task.interval if pbt else 0,
        pbt_explore=BOUNDS if pbt else (),
    )
    if cold:  # no persistent cache, nothing left in memory
        use_compilation_cache(None)
        jax.clear_caches()
    start = time.perf_counter()
    train(config, run_config, callback=task.callback)
    seconds = time.perf_counter() - start
    members = len(LEARNING_RATES) * len(ENTROPY)
    chosen = _chosen(run_dir, members)
    run = load_run(run_dir)
    state = run.state.replace(env_params=task.final_params(run.state.env_params))
    key = jax.random.fold_in(jax.random.key(10_000), seed)
    returns = np.asarray(run.agent.evaluate(state, key, episodes, False)).mean(axis=1)
    return {"seconds": seconds, "chosen": chosen, "return": float(returns[chosen])}


def main() -> None:
    rollax.cores_as_devices()  # before JAX starts: each CPU core a device (`--devices auto`)
    parser = Parser(__doc__)
    parser.add_argument("--tasks", nargs="+", default=["breakout", "maze"])
    parser.repeats(5).episodes(64).reps(50_000).tiny()
    args = parser.parse_args()
    chosen_tasks = tasks(args.tiny)
    unknown = sorted(set(args.tasks) - set(chosen_tasks))
    if unknown:
        parser.error(f"unknown task(s) {unknown}; choose from {sorted(chosen_tasks)}")
    report: dict[str, Any] = {"repeats": args.repeats, "episodes": args.episodes, "tasks": {}}
    with tempfile.TemporaryDirectory(prefix="rollax-pbt-bench-") as tmp:
        for name in args.tasks:
            task = chosen_tasks[name]
            arms: dict[str, list[dict]] = {"grid": [], "pbt": []}
            for seed in range(args.repeats):
                for arm in ("grid", "pbt"):
                    root = Path(tmp) / name
                    out = run_arm(task, arm == "pbt", seed, args.episodes, root, not args.tiny)
                    arms[arm].append(out)
                    print(f"[{name}] {arm} seed {seed}: member {out['chosen']} returns "
                          f"{out['return']:.3f} ({out['seconds']:.0f} s)", flush=True)  # fmt: skip
            grid = np.asarray([r["return"] for r in arms["grid"]])
            pbt = np.asarray([r["return"] for r in arms["pbt"]])
            figures = {
                "budget": task.config.total_steps,
                "grid_returns": grid.tolist(),
                "pbt_returns": pbt.tolist(),
                "grid_iqm": stats.interval(grid, reps=args.reps),
                "pbt_iqm": stats.interval(pbt, reps=args.reps),
                "pbt_minus_grid": stats.interval(
                    np.stack([pbt, grid], axis=1),
                    lambda s: stats.iqm(s[:, 0]) - stats.iqm(s[:, 1]),
                    reps=min(args.reps, 5_000),
                ),
                "probability_pbt_beats_grid": stats.probability_of_improvement(pbt, grid),
                "grid_seconds": statistics.median(r["seconds"] for r in arms["grid"]),
                "pbt_seconds": statistics.median(r["seconds"] for r in arms["pbt"]),
            }
            figures["ratio_seconds"] = figures["pbt_seconds"] / figures["grid_seconds"]
            report["tasks"][name] = figures
            print(
                f"[{name}] IQM grid {figures['grid_iqm'][0]:.3f} "
                f"[{figures['grid_iqm'][1]:.3f}, {figures['grid_iqm'][2]:.3f}], PBT "
                f"{figures['pbt_iqm'][0]:.3f} [{figures['pbt_iqm'][1]:.3f}, "
                f"{figures['pbt_iqm'][2]:.3f}]; P(PBT > grid) "
                f"{figures['probability_pbt_beats_grid']:.2f}; wall PBT/grid "
                f"{figures['ratio_seconds']:.2f}",
                flush=True,
            )
    emit(report)


if __name__ == "__main__":
    main()
