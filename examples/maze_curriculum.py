"""A curriculum in a run directory: the maze's goal moves farther away as the agent learns.

``Maze-v0`` starts the agent at least ``min_goal_distance`` cells from the goal. That
distance is one of the environment's params, which are data in the training state: a
callback given to ``rollax.runs.train`` raises it between compiled chunks, without
compiling again, and the run keeps its ``metrics.csv``, checkpoints and resume. (The maze's
``size`` sets the shapes of its arrays, so it is a constructor option and cannot change
during a run.)

The callback decides from the run alone (the state's params and the chunk's return), so a
run stopped and resumed with the same callback goes on bit for bit as one that never
stopped.

    python examples/maze_curriculum.py --total-steps 262144 --run-dir runs/maze-curriculum

Prints each stage as it starts, then ``eval_return=<mean>`` at the hardest stage.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import jax
import numpy as np

from rollax.agents.ppo import PPOConfig
from rollax.runs import RunConfig, load_run, train

STAGES = (1, 2, 4, 6)  # min_goal_distance, easiest first
ADVANCE_AT = 0.3  # mean return of a logged chunk's episodes (goal 1, each step -0.01,
# an episode that never finds the goal -2)


def curriculum(run, row) -> None:
    """Move to the next stage when the last chunk's episodes averaged ``ADVANCE_AT``."""
    params = run.state.env_params
    stage = STAGES.index(int(params.min_goal_distance))
    solved = row["episode_return"] != "" and float(row["episode_return"]) >= ADVANCE_AT
    if solved and stage + 1 < len(STAGES):
        distance = STAGES[stage + 1]
        print(f"step {run.env_steps:,}: min_goal_distance -> {distance}", flush=True)
        run.state = run.state.replace(env_params=params.replace(min_goal_distance=distance))


def main() -> None:
    """Train with the curriculum in a run directory, then evaluate at the stage reached."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total-steps", type=int, default=262_144)
    parser.add_argument("--run-dir", default="runs/maze-curriculum")
    parser.add_argument("--eval-episodes", type=int, default=64)
    args = parser.parse_args()

    config = PPOConfig(num_envs=64, num_steps=32, total_steps=args.total_steps,
                       learning_rate=2.5e-3, hidden_sizes=(128, 128))  # fmt: skip
    run_config = RunConfig(
        env="Maze-v0",
        env_options=("size=4",),  # a 9 x 9 grid (a constructor option: it sets shapes)
        env_params=(f"min_goal_distance={STAGES[0]}",),  # the first stage
        run_dir=args.run_dir,
        log_every=8_192,
        eval_episodes=0,
        progress=False,
    )
    if Path(args.run_dir, "config.json").exists():
        raise SystemExit(f"{args.run_dir} already holds a run; choose another --run-dir")
    run_dir = train(config, run_config, callback=curriculum)

    run = load_run(run_dir)
    reached = int(run.state.env_params.min_goal_distance)
    returns = run.agent.evaluate(run.state, jax.random.key(1), args.eval_episodes)
    mean = float(np.asarray(returns).mean())
    print(json.dumps({"final_min_goal_distance": reached, "run_dir": str(run_dir)}))
    print(f"eval_return={mean:.3f}")


if __name__ == "__main__":
    main()
