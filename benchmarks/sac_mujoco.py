"""SAC on Gymnasium's MuJoCo tasks stepped on the host: rollax against SB3 and SBX.

rollax's SAC on ``gymnasium/<Task>-v5`` (``rollax.host``, its MuJoCo preset: rl-zoo's
settings) against Stable-Baselines3's SAC and SBX's (SB3's API on JAX) with rl-zoo's settings
for the task: SB3's defaults (one environment, 256 x 256 ReLU networks, Adam 3e-4, a
million-transition replay, batch 256, tau 0.005, gamma 0.99, one gradient step per step,
automatic entropy) with 10,000 random steps first.

Each seed of each library trains ``--steps`` steps in this process (the libraries alternate
seed by seed, so drift hits all alike). The figures: the wall time of training (rollax's
compile included), steps per second, and the return of ``--episodes`` deterministic
episodes after it (off the clock). Returns are summarised by their interquartile mean over
``--seeds`` seeds with rliable's 95% interval; times by their median. A library whose IQM
return stays below ``--learned`` (a return no random policy reaches) did not learn at this
budget, and its row reads "not comparable at this budget".

The last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from _harness import Parser, banner, emit, interval_estimates, ratio

LEARNED = {"HalfCheetah": 1000.0, "Hopper": 500.0, "Walker2d": 500.0, "Ant": 500.0}
"""Returns above what a random policy reaches on each task (random HalfCheetah: about -280)."""


def rollax_seed(task: str, seed: int, steps: int, episodes: int) -> dict[str, Any]:
    """One rollax seed: seconds to train (compile included), steps/s, final return."""
    import jax

    from rollax.agents.sac import PRESETS, make_sac

    env = f"gymnasium/{task}-v5"
    start = time.perf_counter()
    agent = make_sac(PRESETS[env].replace(total_steps=steps), env)
    state = agent.init(jax.random.key(seed))
    state, _ = agent.run(state, steps)
    jax.block_until_ready(state)
    seconds = time.perf_counter() - start
    returns = np.asarray(agent.evaluate(state, jax.random.key(10_000 + seed), episodes, True))
    return {"seconds": seconds, "steps_per_s": steps / seconds, "return": float(returns.mean())}


def peer_seed(library: str, task: str, seed: int, steps: int, episodes: int) -> dict[str, Any]:
    """One seed of SB3's or SBX's SAC at rl-zoo's settings, measured the same way."""
    import gymnasium
    from stable_baselines3.common.evaluation import evaluate_policy

    if library == "sb3":
        from stable_baselines3 import SAC
    else:
        from sbx import SAC

    start = time.perf_counter()
    model = SAC("MlpPolicy", gymnasium.make(f"{task}-v5"), learning_starts=10_000, seed=seed,
                verbose=0)  # fmt: skip
    model.learn(steps)
    seconds = time.perf_counter() - start
    evaluation = gymnasium.make(f"{task}-v5")
    evaluation.reset(seed=10_000 + seed)
    returns, _ = evaluate_policy(model, evaluation, episodes, deterministic=True,
                                 return_episode_rewards=True)  # fmt: skip
    return {"seconds": seconds, "steps_per_s": steps / seconds, "return": float(np.mean(returns))}


def main() -> None:
    args = (
        Parser(__doc__)
        .seeds(5)
        .steps(100_000, help="environment steps per seed")
        .episodes(5, help="deterministic episodes after training")
        .reps(2000)
        .tiny("two seeds of 10,256 steps (256 of them learning), one episode: a smoke test")
    )
    args.add_argument("--task", choices=sorted(LEARNED), default="HalfCheetah")
    args.add_argument("--libraries", default="rollax,sb3,sbx", help="comma-separated")
    options = args.parse_args()
    if options.tiny:
        options.seeds, options.steps, options.episodes = 2, 10_256, 1
    libraries = options.libraries.split(",")
    banner(f"SAC on Gymnasium's {options.task}-v5 (host), {options.steps} steps: "
           f"{', '.join(libraries)}")  # fmt: skip
    runs: dict[str, list[dict]] = {name: [] for name in libraries}
    for seed in range(options.seeds):
        for name in libraries:
            if name == "rollax":
                run = rollax_seed(options.task, seed, options.steps, options.episodes)
            else:
                run = peer_seed(name, options.task, seed, options.steps, options.episodes)
            runs[name].append(run)
            print(f"{name:6s} seed {seed}: {run['seconds']:7.1f} s, {run['steps_per_s']:6.1f} "
                  f"steps/s, return {run['return']:8.1f}", flush=True)  # fmt: skip
    from rliable import metrics

    returns = {k: np.array([[r["return"]] for r in v]) for k, v in runs.items()}
    iqm = interval_estimates(returns, metrics.aggregate_iqm, options.reps)
    seconds = {k: float(np.median([r["seconds"] for r in v])) for k, v in runs.items()}
    learned = {k: iqm[k][0] >= LEARNED[options.task] for k in runs}
    report = {
        "task": options.task,
        "steps": options.steps,
        "runs": runs,
        "iqm_return": iqm,
        "median_seconds": seconds,
        "learned": learned,
        "ratio_seconds": {
            peer: ratio(seconds.get("rollax"), seconds[peer]) for peer in runs if peer != "rollax"
        },
    }
    for name, (estimate, low, high) in iqm.items():
        note = "" if learned[name] else ", not comparable at this budget"
        print(f"{name:6s}: return IQM {estimate:8.1f} [{low:8.1f}, {high:8.1f}], median "
              f"{seconds[name]:7.1f} s{note}")  # fmt: skip
    for peer, value in report["ratio_seconds"].items():
        print(f"rollax/{peer} wall time (median): {value}")
    emit(report)


if __name__ == "__main__":
    main()
