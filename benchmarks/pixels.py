"""Pixels: rendering throughput and PPO on pixel CartPole.

Two parts, in one process (``--parts`` picks some):

``render``: frames per second of ``PixelCartPole-v1`` at its default resolution (one
  camera, 16 x 64), ``--sizes`` environments (256 and 1,024) stepped with random actions
  inside one jitted ``lax.scan`` of ``--steps`` steps (dynamics, autoreset and rendering:
  the whole step; a checksum of every frame is carried so that no rendering is skipped),
  median over ``--repeats``; beside it the same batch of state-only ``CartPole-v1``
  (the cost of stepping without drawing), and Gymnasium's own CartPole renderer
  (``render_mode="rgb_array"``, pygame, 600x400, one environment: what a user of Gymnasium
  renders with) over ``--gym-frames`` frames.

``cartpole``: PPO from pixels with ``PRESETS["PixelCartPole-v1"]`` (the preset
  ``rollax train ppo --env PixelCartPole-v1`` uses: default resolution, frame stack),
  with and without ``augment_pixels``. Training runs in chunks of ``--chunk`` steps; after
  each, the policy is evaluated on ``--episodes`` episodes with sampled actions (not timed).
  Time to 400 = compile (``agent.warmup``) + training time up to the first evaluation with
  a mean return >= 400; a run stops there or after ``--cap-s`` seconds of training.

PPO on gymnax's MinAtar games against rejax is part of ``benchmarks/returns.py``.

Ratios are rollax / peer. The last line printed is one JSON object with every figure.

Usage:
    python benchmarks/pixels.py [--parts render cartpole] [--cap-s 900] [--sizes 256 1024]
"""

from __future__ import annotations

import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from _common import median_seconds, random_actions, rollax_rollout
from _harness import Parser, banner, emit

PIXEL_TARGET = 400.0


# ---------------------------------------------------------------------------- rendering


def render_throughput(sizes: list[int], steps: int, repeats: int, gym_frames: int) -> dict:
    """Frames/s of PixelCartPole-v1 next to state-only CartPole and Gymnasium's renderer."""
    import rollax

    results: dict[str, Any] = {}
    for n in sizes:
        actions = random_actions(steps, n)
        pixel = rollax.make("PixelCartPole-v1", num_envs=n)
        state_only = rollax.make("CartPole-v1", num_envs=n)
        pixel_s = median_seconds(pixel_rollout(pixel, actions), repeats)
        row = {
            "rollax_pixel_frames_per_s": n * steps / pixel_s,
            "rollax_state_steps_per_s": n
            * steps
            / median_seconds(rollax_rollout(state_only, actions), repeats),
        }
        results[str(n)] = row
        print(f"render {n:>5} envs: PixelCartPole {row['rollax_pixel_frames_per_s']:>12,.0f} "
              f"frames/s | CartPole (no pixels) {row['rollax_state_steps_per_s']:>12,.0f} "
              "steps/s", flush=True)  # fmt: skip
    gym = gymnasium_frames_per_s(gym_frames, repeats)
    results["gymnasium_rgb_array_frames_per_s"] = gym
    if gym:
        for n in sizes:
            row = results[str(n)]
            row["ratio_rollax_over_gymnasium"] = row["rollax_pixel_frames_per_s"] / gym
        ratio = results[str(sizes[-1])]["ratio_rollax_over_gymnasium"]
        print(f"render gymnasium CartPole rgb_array (600x400, 1 env): {gym:,.0f} frames/s; "
              f"ratio rollax/gymnasium at {sizes[-1]} envs: {ratio:.0f}", flush=True)  # fmt: skip
    return results


def pixel_rollout(env: Any, actions: jax.Array) -> Any:
    """A jitted rollout that uses every frame (a checksum of the pixels), so that XLA cannot
    drop the rendering as it would an unused observation. Returns a zero-argument function."""
    state, _ = env.reset(jax.random.key(0))

    @jax.jit
    def rollout(state: Any, actions: jax.Array) -> tuple:
        def body(carry: tuple, action: jax.Array) -> tuple:
            state, checksum = carry
            state, ts = env.step(state, action)
            pixels = sum(x.astype(jnp.int32).sum() for x in jax.tree.leaves(ts.obs))
            return (state, checksum + pixels), None

        return jax.lax.scan(body, (state, jnp.zeros((), jnp.int32)), actions)[0]

    return lambda: rollout(state, actions)


def gymnasium_frames_per_s(frames: int, repeats: int) -> float | None:
    """Gymnasium's CartPole stepped and rendered to rgb arrays (``None`` without pygame)."""
    import os

    import gymnasium

    os.environ.setdefault("SDL_AUDIODRIVER", "dummy")  # no sound card: keep pygame quiet
    try:
        import pygame  # noqa: F401
    except ImportError:
        print("pygame is missing: Gymnasium's renderer is not measured.", flush=True)
        return None
    env = gymnasium.make("CartPole-v1", render_mode="rgb_array")
    env.reset(seed=0)
    rng = np.random.default_rng(0)

    def run() -> None:
        for _ in range(frames):
            _, _, terminated, truncated, _ = env.step(int(rng.integers(2)))
            env.render()
            if terminated or truncated:
                env.reset()

    seconds = median_seconds(run, repeats)  # one warm-up call, then the median of repeats
    env.close()
    return frames / seconds


# ---------------------------------------------------------------------------- pixel CartPole


def pixel_cartpole_time_to(
    augment: bool, cap_s: float, chunk: int, episodes: int, seed: int
) -> dict[str, Any]:
    """Train PPO from pixels until an evaluation reaches PIXEL_TARGET or cap_s runs out."""
    from rollax.agents.ppo import PRESETS, make_ppo

    config = PRESETS["PixelCartPole-v1"].replace(augment_pixels=augment)
    chunk = max(chunk // config.batch_size, 1) * config.batch_size
    start = time.perf_counter()
    agent = make_ppo(config, "PixelCartPole-v1")
    agent.warmup([episodes])
    state = jax.block_until_ready(agent.init(jax.random.key(seed)))
    compile_s = time.perf_counter() - start
    key = jax.random.key(10_000 + seed)
    train_s, steps, curve, reached_at = 0.0, 0, [], None
    while steps < config.total_steps and train_s < cap_s:
        start = time.perf_counter()
        state, _ = agent.run(state, chunk)
        jax.block_until_ready(state)
        train_s += time.perf_counter() - start
        steps += chunk
        key, k = jax.random.split(key)
        mean = float(np.mean(np.asarray(agent.evaluate(state, k, episodes, False))))
        curve.append([steps, round(train_s, 2), round(mean, 1)])
        print(f"pixel CartPole augment={augment}: {steps:>8,} steps, {train_s:7.1f} s "
              f"training, evaluation return {mean:6.1f}", flush=True)  # fmt: skip
        if mean >= PIXEL_TARGET:
            reached_at = steps
            break
    return {
        "augment_pixels": augment,
        "reached": reached_at is not None,
        "steps_to_target": reached_at,
        "compile_s": compile_s,
        "train_s": train_s,
        "total_s_to_target": compile_s + train_s if reached_at else None,
        "steps_per_s": steps / train_s,
        "curve_steps_train_s_return": curve,
    }


# ---------------------------------------------------------------------------- main


def main() -> None:
    parser = Parser(__doc__).choice("--parts", ["render", "cartpole"]).sizes(256, 1024)
    parser.steps(100, help="steps per timed render scan").repeats(5)
    parser.add_argument("--gym-frames", type=int, default=500)
    parser.add_argument("--cap-s", type=float, default=900.0, help="training seconds per run")
    parser.add_argument("--chunk", type=int, default=16_384, help="steps between evaluations")
    parser.episodes(32)
    parser.add_argument("--no-augment-run", action="store_true",
                        help="pixel CartPole: only the run with augmentation")  # fmt: skip
    args = parser.parse_args()
    banner()
    report: dict[str, Any] = {"args": vars(args)}
    if "render" in args.parts:
        report["render"] = render_throughput(args.sizes, args.steps, args.repeats,
                                             args.gym_frames)  # fmt: skip
    if "cartpole" in args.parts:
        runs = {}
        for augment in (False, True):
            if augment is False and args.no_augment_run:
                continue
            runs[f"augment_{str(augment).lower()}"] = pixel_cartpole_time_to(
                augment, args.cap_s, args.chunk, args.episodes, seed=0
            )
        report["pixel_cartpole"] = runs
    emit(report)


if __name__ == "__main__":
    main()
