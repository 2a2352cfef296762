"""An 8-member hyperparameter sweep on CartPole: one program against 8 separate runs.

Both arms run the command line as a user would, in subprocesses, from an empty compilation
cache each (the separate runs share theirs, as runs on one machine do by default, so runs 2
to 8 start without compiling):

- one program: ``rollax train ALGO --sweep A=a1,a2,a3,a4 --sweep B=b1,b2``;
- separate runs: ``rollax train ALGO --A ai --B bj`` for each of the 8 points, one after the
  other.

Each arm's wall time counts everything: starting Python, compiling, training the preset's
budget, checkpoints and the final evaluation. It is repeated and the median reported, with
the ratio one program / separate runs (target: at most 0.35), and each point's final
deterministic return from both arms (the sweep's members train as the separate runs do, to
float rounding, so returns are close but not equal). The last line is one JSON object.

    python benchmarks/sweep.py [--algos ppo dqn] [--repeats 3] [--total-steps N] [--values K]

``--values K`` keeps the first K values of the first entry (a grid of K x 2; the figures
use all 4), for a quick check that the script runs.
"""

from __future__ import annotations

import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _harness import Parser, emit

GRIDS = {
    "ppo": (("learning_rate", ("1e-3", "2.5e-3", "5e-3", "1e-2")), ("ent_coef", ("0", "0.01"))),
    "dqn": (("learning_rate", ("3e-4", "1e-3", "3e-3", "1e-2")), ("tau", ("0.02", "0.1"))),
}
"""Each algorithm's grid: 4 x 2 points, one seed each."""


def _rollax(args: list[str], cache: Path) -> float:
    """Wall seconds of ``rollax ARGS`` in a subprocess (raises on failure)."""
    env = {**os.environ, "ROLLAX_CACHE_DIR": str(cache)}
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "rollax", *args], env=env, capture_output=True, text=True
    )
    seconds = time.perf_counter() - start
    if proc.returncode:
        raise RuntimeError(f"rollax {' '.join(args)} failed:\n{proc.stderr[-2000:]}")
    return seconds


def _final_returns(run_dir: Path) -> list[float]:
    """Each grid point's (or the run's) final deterministic return from ``eval.json``."""
    result = json.loads((run_dir / "eval.json").read_text())
    if "points" in result:
        return [p["deterministic"] for p in result["points"]]
    return [result["deterministic"]["mean"]]


def grid(algo: str, values: int) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``algo``'s grid with the first ``values`` values of its first entry."""
    (a, a_values), second = GRIDS[algo]
    return (a, a_values[:values]), second


def measure(algo: str, values: int, total_steps: int | None, work: Path) -> dict:
    """One repeat of both arms for ``algo``: wall seconds and final returns."""
    base = ["train", algo, "--env", "CartPole-v1", "--no-progress"]
    if total_steps:
        base += ["--total-steps", str(total_steps)]
    (a, a_values), (b, b_values) = grid(algo, values)
    flag = lambda name: "--" + name.replace("_", "-")  # noqa: E731
    one_dir = work / f"{algo}-sweep"
    one = _rollax(
        [*base, "--sweep", f"{a}={','.join(a_values)}", "--sweep", f"{b}={','.join(b_values)}",
         "--run-dir", str(one_dir)],
        work / f"{algo}-cache-sweep",
    )  # fmt: skip
    separate, returns = 0.0, []
    for i, (x, y) in enumerate(itertools.product(a_values, b_values)):
        run_dir = work / f"{algo}-run{i}"
        separate += _rollax(
            [*base, flag(a), x, flag(b), y, "--run-dir", str(run_dir)], work / f"{algo}-cache"
        )
        returns += _final_returns(run_dir)
    return {
        "one_program_s": one,
        "separate_runs_s": separate,
        "one_program_returns": _final_returns(one_dir),
        "separate_returns": returns,
    }


def main() -> None:
    parser = Parser(__doc__).choice("--algos", GRIDS).repeats(3)
    parser.add_argument("--total-steps", type=int, default=0, help="0: the preset's budget")
    parser.add_argument("--values", type=int, default=4, choices=range(1, 5))
    args = parser.parse_args()
    results = {}
    for algo in args.algos:
        runs = []
        for repeat in range(args.repeats):
            with tempfile.TemporaryDirectory() as work:
                runs.append(measure(algo, args.values, args.total_steps or None, Path(work)))
            r = runs[-1]
            print(f"{algo} repeat {repeat}: one program {r['one_program_s']:.1f} s, separate "
                  f"runs {r['separate_runs_s']:.1f} s", flush=True)  # fmt: skip
        one = statistics.median(r["one_program_s"] for r in runs)
        separate = statistics.median(r["separate_runs_s"] for r in runs)
        ratio = one / separate
        (a, a_values), (b, b_values) = grid(algo, args.values)
        points = [f"{a}={x} {b}={y}" for x, y in itertools.product(a_values, b_values)]
        results[algo] = {
            "members": len(points),
            "repeats": args.repeats,
            "one_program_s": round(one, 2),
            "separate_runs_s": round(separate, 2),
            "ratio_one_program_vs_separate": round(ratio, 3),
            "target_met": ratio <= 0.35,
            "final_return": {
                p: {
                    "one_program": runs[-1]["one_program_returns"][i],
                    "separate": runs[-1]["separate_returns"][i],
                }
                for i, p in enumerate(points)
            },
            "all_s": [[round(r["one_program_s"], 2), round(r["separate_runs_s"], 2)] for r in runs],
        }
        print(f"{algo.upper()}: one program {one:.1f} s, {len(points)} separate runs "
              f"{separate:.1f} s (median of {args.repeats}): ratio {ratio:.3f} (target <= "
              f"0.35)")  # fmt: skip
        for p, v in results[algo]["final_return"].items():
            print(f"  {p}: final return {v['one_program']:.4g} in the sweep, "
                  f"{v['separate']:.4g} alone")  # fmt: skip
    emit({"benchmark": "sweep", "env": "CartPole-v1", "results": results})


if __name__ == "__main__":
    main()
