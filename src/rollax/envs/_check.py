"""An environment checker, in the spirit of Gymnasium's and Stable-Baselines3's ``check_env``.

:func:`check_env` runs an environment the way rollax will and reports every way it breaks
rollax's interface, each finding naming the environment, the method and what was expected:

- **Spaces** (cheap, traced only): observations of ``reset_env`` and ``step_env`` against
  the observation space in structure, shape and dtype; reward float32 ``()`` and
  ``terminated`` bool ``()``; the next state shaped like the first; params an
  :class:`~rollax.envs.EnvParams` with a positive ``max_episode_steps``; spaces that are
  rollax spaces. :func:`check_spaces` is this part alone; :func:`rollax.make` runs it.
- **A rollout** of a few environments with random actions: observations within the space's
  bounds, finite rewards, ``final_obs`` equal to the observation except where an episode
  ended, ``truncated`` exactly at the time limit, sampled actions inside the action space.
- **Fresh resets**: a state that carries a key must take it from the reset key.
- **Purity**: ``reset_env`` and ``step_env`` give the same results in two separate traces
  (numpy randomness or Python state read while tracing differs) and under ``vmap``.
- **Params as data**: changing a value of the params does not compile again.
- **render**, when present: uint8 ``(H, W, 3)``, under ``jit``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rollax._compile import FastCompile
from rollax.envs._base import Environment, EnvParams
from rollax.envs._findings import (
    EnvCheckError,
    Finding,
    _check_declarations,
    _check_shapes,
    _Report,
    spaces_findings,
)
from rollax.envs._registry import make
from rollax.envs._vec_env import VecEnv
from rollax.spaces import Dict, Discrete

__all__ = ["check_env", "check_spaces"]

# ---------------------------------------------------------------------------- helpers


def _zeros(spec: Any) -> Any:
    return jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), spec)


def _trees_equal(a: Any, b: Any, exact: bool = False) -> bool:
    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    if jax.tree.structure(a) != jax.tree.structure(b) or len(la) != len(lb):
        return False
    for x, y in zip(la, lb, strict=True):
        x, y = _raw(x), _raw(y)
        if x.shape != y.shape:
            return False
        if exact or not np.issubdtype(x.dtype, np.floating):
            if not np.array_equal(x, y):
                return False
        elif not np.allclose(x, y, rtol=1e-5, atol=1e-6, equal_nan=True):
            return False
    return True


def _raw(x: Any) -> np.ndarray:
    if hasattr(x, "dtype") and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
        return np.asarray(jax.random.key_data(x))
    return np.asarray(x)


# ---------------------------------------------------------------------------- the checks


def _compiled(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` jitted with XLA's lightest CPU optimization: the checks run each program once."""
    return FastCompile(fn, cpu_level=0)


def _check_calls(env: Environment, params: EnvParams, report: _Report) -> None:
    """Purity (two traces, vmap), params as data and fresh keys, in four compiles."""
    traces: list[None] = []

    def episode_start(key: jax.Array, action: Any, p: EnvParams) -> tuple[Any, Any]:
        """A reset and one step: ``(state, (next_state, reward, terminated))``."""
        traces.append(None)
        state = env.reset_env(key, p)
        return state, env.step_env(state, action, p)

    batch = 4
    keys = jax.random.split(jax.random.key(1), batch)
    actions = env.action_space.sample(jax.random.key(2), (batch,))
    action = jax.tree.map(lambda x: x[0], actions)
    jitted = _compiled(episode_start)
    out = report.attempt(
        "step_env", "reset_env then step_env under jit", lambda: jitted(keys[0], action, params)
    )
    if out is None:
        return
    # A second, separate trace: numpy or Python state read while tracing (a pure function
    # reads none) comes out different.
    again = report.attempt(
        "step_env", "reset_env then step_env, traced again",
        lambda: _compiled(lambda *a: episode_start(*a))(keys[0], action, params),
    )  # fmt: skip
    if again is None:
        return
    for method, first, second in (("reset_env", out[0], again[0]), ("step_env", out[1], again[1])):
        if not _trees_equal(first, second):
            report.add(
                method,
                "gives different results in two calls with the same arguments: it is not a "
                "pure function of them (numpy or Python randomness, or state kept outside "
                "its arguments?)",
            )
            return
    # Params as data: other values, no new trace.
    count = len(traces)
    other = jax.tree.map(_moved, params)
    report.attempt("default_params", "step_env with other values of the params",
                   lambda: jitted(keys[0], action, other))  # fmt: skip
    if len(traces) > count:
        report.add(
            "default_params",
            "changing a value of the params compiled reset_env and step_env again: a field "
            "is static (part of the pytree structure) where it should be data; declare every "
            "field as a leaf (rollax.EnvParams fields)",
        )
    # vmap: a batch of environments, each as if alone.
    mapped = report.attempt(
        "step_env", "reset_env then step_env under vmap",
        lambda: _compiled(jax.vmap(episode_start, (0, 0, None)))(keys, actions, params),
    )  # fmt: skip
    if mapped is None:
        return
    singles = [jitted(keys[i], jax.tree.map(lambda x, i=i: x[i], actions), params)
               for i in range(batch)]  # fmt: skip
    if not _trees_equal(mapped, jax.tree.map(lambda *xs: jnp.stack(xs), *singles)):
        report.add(
            "step_env",
            "gives other results under vmap than one environment at a time: a batched call "
            "must treat each environment alone",
        )
    # Fresh resets: a key carried in the state comes from the reset key.
    for path, leaf in jax.tree_util.tree_leaves_with_path(mapped[0]):
        if jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key):
            data = np.asarray(jax.random.key_data(leaf))
            if all(np.array_equal(data[0], d) for d in data[1:]):
                report.add(
                    "reset_env",
                    f"the state's key {jax.tree_util.keystr(path)} is the same for every reset "
                    "key: every episode would draw the same randomness; derive it from the "
                    "key reset_env is given",
                )


def _moved(x: Any) -> Any:
    """Another value of a params leaf, of the same dtype (booleans stay)."""
    x = np.asarray(x)
    if np.issubdtype(x.dtype, np.bool_):
        return x
    if np.issubdtype(x.dtype, np.integer):
        return (x + 1).astype(x.dtype)
    return (x * 1.5 + 0.25).astype(x.dtype)


def _inside(space: Any, x: Any) -> np.ndarray:
    """Per leading index, whether ``x`` (leaves ``(*lead, *shape)``) lies in ``space``."""
    if isinstance(space, Dict):
        parts = [_inside(s, x[k]) for k, s in space.spaces.items()]
        return np.all(np.stack(parts), axis=0)
    x = np.asarray(x)
    lead = x.shape[: x.ndim - len(space.shape)]
    flat = x.reshape((*lead, -1))
    if isinstance(space, Discrete):
        return ((flat >= 0) & (flat < space.n)).all(-1)
    low = np.broadcast_to(space.low, space.shape).reshape(-1)
    high = np.broadcast_to(space.high, space.shape).reshape(-1)
    return ((flat >= low) & (flat <= high)).all(-1)


def _rollout(env: Environment, params: EnvParams, num_envs: int, steps: int) -> Iterator[Any]:
    """Time-major records of a same-step autoreset rollout with uniform random actions."""
    vec = VecEnv(env, num_envs=num_envs, autoreset_mode="same_step", reset_strategy="on_done")
    space = env.action_space

    def run(key: jax.Array) -> Any:
        k_reset, k_actions = jax.random.split(key)
        state, first = vec.reset(k_reset, params)

        def body(state: Any, k: jax.Array) -> tuple:
            action = space.sample(k, (num_envs,))
            state, ts = vec.step(state, action, params)
            return state, (action, ts)

        _, (actions, steps_) = jax.lax.scan(body, state, jax.random.split(k_actions, steps))
        return first, actions, steps_

    return _compiled(run)(jax.random.key(8))


def _check_rollout(env: Environment, params: EnvParams, report: _Report, steps: int) -> None:
    num_envs = 4
    out = report.attempt("step_env", f"a rollout of {num_envs} environments",
                         lambda: _rollout(env, params, num_envs, steps))  # fmt: skip
    if out is None:
        return
    first, actions, ts = out
    obs_space, action_space = env.observation_space, env.action_space
    if not _inside(action_space, actions).all():
        report.add("action_space", "sample() drew an action outside the action space")
    if not _inside(obs_space, first.obs).all():
        report.add("observe", f"after reset_env, an observation lies outside {obs_space!r}")
    obs_inside = _inside(obs_space, ts.obs)
    if not obs_inside.all():
        t = int(np.argwhere(~obs_inside)[0][0])
        report.add(
            "observe",
            f"an observation at step {t + 1} of a random rollout lies outside the observation "
            f"space {obs_space!r}",
        )
    reward = np.asarray(ts.reward)
    if not np.isfinite(reward).all():
        report.add("step_env", "returned a reward that is not finite (NaN or inf)")
    done = np.asarray(ts.terminated | ts.truncated)
    final_inside = _inside(obs_space, ts.final_obs)
    if not final_inside[done].all():
        report.add("final_obs", "the final observation of an ended episode lies outside the space")
    equal = jax.tree.map(lambda a, b: np.asarray(a) == np.asarray(b), ts.obs, ts.final_obs)
    per_step = [x.reshape((*done.shape, -1)).all(-1) for x in jax.tree.leaves(equal)]
    same = np.all(np.stack(per_step), axis=0)
    if not same[~done].all():
        report.add("final_obs", "differs from the observation at a step that ended no episode")
    limit = np.broadcast_to(np.asarray(params.max_episode_steps), (num_envs,))
    length = np.zeros(num_envs, int)
    for t in range(done.shape[0]):
        length += 1
        truncated, terminated = np.asarray(ts.truncated[t]), np.asarray(ts.terminated[t])
        early = truncated & (length != limit)
        missed = (length >= limit) & ~truncated & ~terminated
        if early.any() or missed.any():
            at = int(length[early | missed][0])
            report.add(
                "truncated",
                f"{'set' if early.any() else 'not set'} at step {at} of an episode; expected "
                f"exactly at max_episode_steps={limit[0]}",
            )
            break
        length[done[t]] = 0


def _check_render(env: Environment, params: EnvParams, report: _Report) -> None:
    if not callable(getattr(env, "render", None)):
        return
    render = _compiled(lambda key: env.render(env.reset_env(key, params), params))
    frame = report.attempt("render", "render(state, params) under jit",
                           lambda: render(jax.random.key(9)))  # fmt: skip
    if frame is None:
        return
    frame = np.asarray(frame)
    if frame.dtype != np.uint8 or frame.ndim != 3 or frame.shape[-1] != 3:
        report.add("render", f"returns {frame.dtype.name}{frame.shape}; expected uint8 (H, W, 3)")


def _unwrap(env: Any) -> tuple[Environment, str]:
    """The :class:`Environment` of an id, a ``VecEnv`` or an environment, and its name."""
    if isinstance(env, str):
        return make(env, check=False).env, env
    if isinstance(env, VecEnv):
        return env.env, env.env_id
    if isinstance(env, Environment):
        return env, env.name
    raise TypeError(
        f"check_env: env must be an id, a rollax.VecEnv or a rollax.Environment, got "
        f"{type(env).__name__}."
    )


def check_spaces(env: Environment | Any, env_id: str | None = None) -> tuple[Finding, ...]:
    """The cheap part of :func:`check_env`: declarations, shapes and dtypes, traced only.

    Returns:
        The findings (empty when everything fits).
    """
    env, name = _unwrap(env)
    return spaces_findings(env, env_id or name)


def check_env(
    env: Any,
    params: EnvParams | None = None,
    *,
    steps: int = 200,
    raise_error: bool = True,
) -> tuple[Finding, ...]:
    """Check an environment against rollax's interface and report every finding.

    The checks, in order (each later group runs once the earlier ones pass): declarations
    (spaces, params), shapes and dtypes of ``reset_env``, ``step_env`` and ``observe``
    (traced only); purity eagerly, under ``jit``, under ``vmap`` and twice in a row; params
    as data (no recompile for other values); keys in the state taken from the reset key; a
    random rollout of 4 environments (observations within bounds, finite rewards,
    ``final_obs``, ``truncated`` at the limit, sampled actions); ``render`` when present.

    Args:
        env: A registered id (or import path), a :class:`~rollax.VecEnv` or an
            :class:`~rollax.Environment`.
        params: The params to check with (default: the environment's).
        steps: Steps of the random rollout (4 environments, same-step autoreset).
        raise_error: Raise :class:`EnvCheckError` listing every finding (default), or
            return them.

    Returns:
        The findings, empty when the environment passes.

    Raises:
        EnvCheckError: with ``raise_error``, if anything was found.
    """
    env, name = _unwrap(env)
    report = _Report(name)
    default = _check_declarations(env, report)
    params = default if params is None else params
    if params is not None and not report.findings:
        if _check_shapes(env, params, report) is not None and not report.findings:
            _check_calls(env, params, report)
            _check_rollout(env, params, report, steps)
            _check_render(env, params, report)
    if raise_error and report.findings:
        raise EnvCheckError(report.findings)
    return tuple(report.findings)
