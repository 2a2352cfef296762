"""Agents on host environments against the peers that train on them: PPO on Gymnasium's CartPole.

rollax's PPO on ``gymnasium/CartPole-v1`` (Gymnasium's own CartPole, stepped on the host by
``rollax.host``), with rollax's CartPole-v1 preset, against Stable-Baselines3's PPO with
rl-zoo's CartPole-v1 settings (8 environments, n_steps 32, batch 256, 20 epochs, gamma 0.98,
lambda 0.8, lr 2.5e-3 and clip 0.2 both annealed linearly to 0, no entropy bonus), each on
its own ``SyncVectorEnv`` of Gymnasium's CartPole-v1.

Time to 475, per seed, one seed at a time: the wall time from building the agent (rollax's
compile included, with no compilation cache) to the end of the first chunk of ``--chunk``
environment steps after which a stochastic evaluation of ``--episodes`` episodes averages at
least 475. The evaluations are not timed. A seed that never gets there within ``--steps``
counts its whole budget's time and is reported as unsolved. Figures: each library's
interquartile mean over ``--seeds`` seeds, with rliable's 95% interval, and the ratio
rollax/SB3 of the IQMs. Throughput (steps per second of training, compile excluded) is
reported beside them.

The last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import functools
import time
from typing import Any

import numpy as np

from _harness import Parser, banner, emit, interval_estimates, ratio

SOLVED = 475.0


def rollax_seed(
    seed: int, total: int, chunk: int, episodes: int, settings: str = "preset"
) -> dict[str, Any]:
    """One rollax seed: seconds to 475 (compile included), steps, training throughput.

    ``settings``: rollax's CartPole-v1 preset, or ``"rl-zoo"``: SB3's settings (the clip range
    not annealed: rollax's is a constant).
    """
    import jax

    from rollax.agents.ppo import PRESETS, PPOConfig, make_ppo

    RL_ZOO = PPOConfig(
        num_envs=8, num_steps=32, num_minibatches=1, num_epochs=20, gamma=0.98, gae_lambda=0.8,
        learning_rate=2.5e-3, lr_schedule="linear", clip_eps=0.2, ent_coef=0.0,
    )  # fmt: skip

    start = time.perf_counter()
    config = (PRESETS["CartPole-v1"] if settings == "preset" else RL_ZOO).replace(total_steps=total)
    agent = make_ppo(config, "gymnasium/CartPole-v1")
    agent.warmup()
    state = agent.init(jax.random.key(seed))
    setup = time.perf_counter() - start
    return _chunks(
        lambda s: agent.run(s, chunk)[0],
        lambda s, k: np.asarray(agent.evaluate(s, jax.random.key(k), episodes, False))[0],
        state, setup, total, chunk, seed,
    )  # fmt: skip


def sb3_seed(seed: int, total: int, chunk: int, episodes: int) -> dict[str, Any]:
    """One Stable-Baselines3 seed at rl-zoo's CartPole-v1 settings, measured the same way.

    One ``learn`` of the whole budget (its schedules span it), with a callback that
    evaluates after every ``chunk`` steps, off the clock, and stops once solved.
    """
    import gymnasium
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.vec_env import DummyVecEnv

    torch.set_num_threads(1)  # SB3's small MLPs run faster on one thread here
    start = time.perf_counter()
    env = DummyVecEnv([lambda: gymnasium.make("CartPole-v1")] * 8)
    linear = lambda initial: lambda remaining: remaining * initial  # noqa: E731
    model = PPO(
        "MlpPolicy", env, n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98, n_epochs=20,
        ent_coef=0.0, learning_rate=linear(2.5e-3), clip_range=linear(0.2), seed=seed, verbose=0,
    )  # fmt: skip
    evaluation = DummyVecEnv([lambda: gymnasium.make("CartPole-v1")])

    class Chunks(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.next, self.off_clock, self.solved_at = chunk, 0.0, None

        def _on_step(self) -> bool:
            if self.num_timesteps < self.next:
                return True
            pause = time.perf_counter()
            evaluation.seed(10_000 + seed * 1000 + self.next // chunk)
            returns, _ = evaluate_policy(self.model, evaluation, episodes, deterministic=False,
                                         return_episode_rewards=True)  # fmt: skip
            self.off_clock += time.perf_counter() - pause
            self.next += chunk
            if float(np.mean(returns)) >= SOLVED:
                self.solved_at = self.num_timesteps
                return False
            return True

    callback = Chunks()
    learn_start = time.perf_counter()
    model.learn(total, callback=callback)
    end = time.perf_counter()
    train = end - learn_start - callback.off_clock
    steps = callback.solved_at or total
    return {"seconds": end - start - callback.off_clock, "steps": steps,
            "solved": callback.solved_at is not None, "steps_per_s": steps / train}  # fmt: skip


def _chunks(
    run: Any, evaluate: Any, state: Any, setup: float, total: int, chunk: int, seed: int
) -> dict[str, Any]:
    """Train ``chunk`` steps at a time (timed), evaluating after each (not timed)."""
    train, steps = 0.0, 0
    while steps < total:
        start = time.perf_counter()
        state = run(state)
        train += time.perf_counter() - start
        steps += chunk
        if float(np.mean(evaluate(state, 10_000 + seed * 1000 + steps // chunk))) >= SOLVED:
            return {"seconds": setup + train, "steps": steps, "solved": True,
                    "steps_per_s": steps / train}  # fmt: skip
    return {"seconds": setup + train, "steps": steps, "solved": False, "steps_per_s": steps / train}


def main() -> None:
    args = (
        Parser(__doc__)
        .seeds(5)
        .steps(131_072, help="budget per seed (environment steps)")
        .episodes(16, help="episodes of each evaluation")
        .reps(2000)
        .tiny("two seeds of 8,192 steps: a smoke test")
    )
    args.add_argument("--chunk", type=int, default=8192, help="steps between evaluations")
    args.add_argument("--rollax-settings", choices=("preset", "rl-zoo"), default="preset",
                      help="rollax's CartPole-v1 preset, or SB3's rl-zoo settings")  # fmt: skip
    args.add_argument("--compilation-cache", default=None,
                      help="a directory for JAX's persistent compilation cache, filled by a "
                      "first rollax run before the timed ones (default: none)")  # fmt: skip
    options = args.parse_args()
    if options.tiny:
        options.seeds, options.steps, options.chunk, options.episodes = 2, 8192, 4096, 2
    banner("PPO on Gymnasium's CartPole-v1 (host environments): time to 475, rollax and SB3")
    rollax = functools.partial(rollax_seed, settings=options.rollax_settings)
    if options.compilation_cache:
        from _common import use_compilation_cache

        use_compilation_cache(options.compilation_cache)
        rollax(0, options.chunk, options.chunk, 1)  # fills the cache
    runs: dict[str, list[dict]] = {"rollax": [], "sb3": []}
    for seed in range(options.seeds):  # the libraries alternate, so drift hits both alike
        for name, measure in (("rollax", rollax), ("sb3", sb3_seed)):
            run = measure(seed, options.steps, options.chunk, options.episodes)
            runs[name].append(run)
            line = f"{run['seconds']:6.1f} s, {run['steps']:7d} steps, solved {run['solved']}"
            print(f"{name:6s} seed {seed}: {line}, {run['steps_per_s']:8.0f} steps/s", flush=True)
    from rliable import metrics

    seconds = {k: np.array([[r["seconds"]] for r in v]) for k, v in runs.items()}
    iqm = interval_estimates(seconds, metrics.aggregate_iqm, options.reps)
    report = {
        "rollax_settings": options.rollax_settings,
        "compilation_cache": bool(options.compilation_cache),
        "runs": runs,
        "iqm_seconds": iqm,
        "ratio_iqm_seconds": ratio(iqm["rollax"][0], iqm["sb3"][0]),
        "solved": {k: sum(r["solved"] for r in v) for k, v in runs.items()},
        "median_steps_per_s": {
            k: float(np.median([r["steps_per_s"] for r in v])) for k, v in runs.items()
        },
    }
    for name, (estimate, low, high) in iqm.items():
        print(f"{name:6s}: IQM {estimate:6.1f} s [{low:6.1f}, {high:6.1f}], solved "
              f"{report['solved'][name]}/{options.seeds}")  # fmt: skip
    print(f"rollax/SB3 time to 475 (IQM): {report['ratio_iqm_seconds']}")
    emit(report)


if __name__ == "__main__":
    main()
