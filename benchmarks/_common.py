"""Helpers shared by the benchmark scripts: timing, rollouts of rollax's environments and
training in timed chunks. The peers live in ``_peers``, the command line, banner, JSON line
and statistics in ``_harness``."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np


class Timed:
    """Seconds spent in a ``with`` block: ``with Timed() as t: ...; t.seconds``."""

    def __enter__(self) -> Timed:
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.seconds = time.perf_counter() - self.start


def use_compilation_cache(directory: str | None) -> None:
    """Read and write JAX's persistent compilation cache in ``directory`` (None: no cache)
    from the next compile on. JAX fixes its cache when it first compiles, so the cache is
    reset before the new directory is set; setting the directory alone would do nothing."""
    from jax.experimental.compilation_cache import compilation_cache

    compilation_cache.reset_cache()
    jax.config.update("jax_enable_compilation_cache", directory is not None)
    jax.config.update("jax_compilation_cache_dir", directory)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)


def median_seconds(run: Callable[[], object], repeats: int) -> float:
    """Median wall time of ``run()`` over ``repeats`` calls, after one warm-up call (which
    compiles); each call is waited for with ``block_until_ready``."""
    jax.block_until_ready(run())
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(run())
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def interleaved_median_seconds(runs: dict[Any, Callable[[], object]], repeats: int) -> dict:
    """Median wall time of each ``runs[name]()`` over ``repeats`` rounds, each round calling
    every run once in turn (after one warm-up call each, which compiles); each call is waited
    for with ``block_until_ready``.

    Variants timed one after another, minutes apart, differ by up to 30% on a loaded machine
    for reasons of the machine's, not theirs; timed in turn, the same slow minute falls on
    all of them, and their ratios hold."""
    for run in runs.values():
        jax.block_until_ready(run())
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            start = time.perf_counter()
            jax.block_until_ready(run())
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def random_actions(num_steps: int, num_envs: int, num_actions: int = 2) -> jax.Array:
    """The table of discrete actions every JAX variant replays: int32 ``(steps, envs)``."""
    return jax.random.randint(jax.random.key(1), (num_steps, num_envs), 0, num_actions, jnp.int32)


def rollax_rollout(env: Any, actions: jax.Array) -> Callable[[], tuple]:
    """A jitted rollout of a rollax ``VecEnv`` replaying ``actions`` (leading time axis) in a
    ``lax.scan`` from a fixed reset. Returns a zero-argument function giving
    ``(final_state, episodes_finished)``, like :func:`gymnax_rollout`."""
    state, _ = env.reset(jax.random.key(0))

    @jax.jit
    def rollout(state, actions):
        def body(state, action):
            state, ts = env.step(state, action)
            return state, ts.done.sum()

        state, done = jax.lax.scan(body, state, actions)
        return state, done.sum()

    return lambda: rollout(state, actions)


def train_in_chunks(
    run_chunk: Callable[[Any], Any],
    evaluate: Callable[[Any, jax.Array], Any],
    state: Any,
    total: int,
    chunk: int,
    seed: int,
) -> Iterator[tuple[int, float, np.ndarray]]:
    """Train ``chunk`` steps at a time (timed) up to ``total``, evaluating after each chunk
    (not timed; keys split from ``key(10_000 + seed)``). Yields, after each chunk, the steps
    trained so far, the training seconds so far and the evaluation's returns; the caller
    stops early by leaving the loop."""
    train_s, steps = 0.0, 0
    key = jax.random.key(10_000 + seed)
    while steps < total:
        with Timed() as t:
            state = jax.block_until_ready(run_chunk(state))
        train_s += t.seconds
        steps += chunk
        key, k = jax.random.split(key)
        yield steps, train_s, np.asarray(evaluate(state, k))
