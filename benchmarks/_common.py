"""Helpers shared by the benchmark scripts: timing and the gymnax CartPole reference."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp


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


def median_of(runs: list[dict], key: str) -> float | None:
    """Median of ``run[key]`` over the runs where it is not None (None if there are none)."""
    values = [r[key] for r in runs if r[key] is not None]
    return statistics.median(values) if values else None


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


def gymnax_cartpole(num_envs: int, num_steps: int) -> Callable[[], tuple]:
    """:func:`gymnax_rollout` of gymnax's CartPole-v1."""
    return gymnax_rollout("CartPole-v1", num_envs, num_steps)


def gymnax_rollout(env_id: str, num_envs: int, num_steps: int) -> Callable[[], tuple]:
    """A jitted rollout of gymnax's ``env_id`` under ``vmap`` with its own autoreset (a reset
    computed every step; the caller splits one key per environment per step, as gymnax's API
    requires), replaying :func:`random_actions`. Returns a zero-argument function giving
    ``(final_state, episodes_finished)``."""
    import gymnax

    env, params = gymnax.make(env_id)
    actions = random_actions(num_steps, num_envs, int(env.action_space(params).n))
    keys = jax.random.split(jax.random.key(0), num_envs)
    _, state = jax.vmap(env.reset, in_axes=(0, None))(keys, params)
    step = jax.vmap(env.step, in_axes=(0, 0, 0, None))

    @jax.jit
    def rollout(state, key, actions):
        def body(carry, action):
            state, key = carry
            key, step_key = jax.random.split(key)
            _, state, _, terminated, truncated, _ = step(
                jax.random.split(step_key, num_envs), state, action, params
            )
            return (state, key), (terminated | truncated).sum()

        (state, _), done = jax.lax.scan(body, (state, key), actions)
        return state, done.sum()

    key = jax.random.key(2)
    return lambda: rollout(state, key, actions)


class FiveValueStep:
    """gymnax 1.0's environment with the old 5-value step rejax 0.1.3 expects."""

    def __init__(self, env: Any) -> None:
        self._env = env

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "_env":  # copying builds one without _env
            raise AttributeError(name)
        return getattr(self._env, name)

    def step(self, key, state, action, params=None):
        obs, state, reward, terminated, truncated, info = self._env.step(key, state, action, params)
        return obs, state, reward, jnp.logical_or(terminated, truncated), info

    def __hash__(self) -> int:
        return hash((type(self), id(self._env)))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FiveValueStep) and other._env is self._env
