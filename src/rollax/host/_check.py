"""``rollax check`` for host environments: made, reset and stepped with random actions."""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

import numpy as np

from rollax import spaces as rspaces
from rollax.envs._findings import Finding
from rollax.host._env import HostEnv, HostEnvError
from rollax.host._make import make

__all__ = ["check_host_env", "is_host_env"]


def is_host_env(env: str) -> bool:
    """Whether the command line's ``--env`` string names a host environment.

    ``"gymnasium/<id>"``, ``"ale/<Game>-v5"``, ``"envpool/<Task>"``, or ``"module:Name"`` where
    ``Name`` is a ``gymnasium.Env`` class or a function returning a ``gymnasium.Env`` or a
    Gymnasium ``VectorEnv`` (called once, with no options, to see which). Anything else is left
    to :func:`rollax.make`, which also reports a module that cannot be imported.
    """
    if env.startswith(("gymnasium/", "ale/", "envpool/")):
        return True
    if ":" not in env or importlib.util.find_spec("gymnasium") is None:
        return False
    import gymnasium

    module, _, attribute = env.partition(":")
    try:
        found = getattr(importlib.import_module(module), attribute, None)
    except Exception:
        return False
    if isinstance(found, type):
        return issubclass(found, (gymnasium.Env, gymnasium.vector.VectorEnv))
    if not callable(found):
        return False
    try:
        made = found()
    except Exception:
        return False
    host = isinstance(made, (gymnasium.Env, gymnasium.vector.VectorEnv))
    if host:
        made.close()
    return host


def check_host_env(env: Any, *, steps: int = 200, num_envs: int = 4) -> tuple[Finding, ...]:
    """Check a host environment against rollax's contracts and report every finding.

    It is made (spaces rollax's agents can take), reset twice with the same seeds (the same
    observations), and stepped ``steps`` times with random actions; every observation must
    have its space's shape and dtype, be finite and lie within the space's bounds, every
    reward be finite, and ``step`` return Gymnasium's five values (see
    :class:`~rollax.host.HostEnv`).

    Args:
        env: What :func:`rollax.host.make` takes, or a :class:`~rollax.host.HostEnv`.
        steps: Steps of the random rollout.
        num_envs: Environments made for the rollout (of a ``gymnasium.Env``).

    Returns:
        The findings, empty when the environment passes.
    """
    name = env if isinstance(env, str) else getattr(env, "name", type(env).__name__)
    if not isinstance(env, HostEnv):
        try:
            env = make(env, num_envs)
        except (ValueError, TypeError, HostEnvError) as err:
            return (Finding(str(name), "make", str(err)),)
    findings: list[Finding] = []
    rng = np.random.default_rng(0)
    try:
        obs = env.reset(seed=0)
        _bounds(env, obs, "reset", findings)
        for t in range(1, steps + 1):
            ts = env.step(_random_actions(env.action_space, env.num_envs, rng))
            _bounds(env, ts.final_obs, f"step {t}", findings)
    except HostEnvError as err:
        method = "reset" if ", reset at step" in str(err) else "step"
        findings.append(Finding(env.name, method, str(err).removeprefix(f"{env.name}, ")))
    finally:
        env.close()
    return tuple(findings)


def _random_actions(space: rspaces.Space, n: int, rng: np.random.Generator) -> np.ndarray:
    if isinstance(space, rspaces.Discrete):
        return rng.integers(0, space.n, n).astype(np.int32)
    low = np.where(np.isfinite(space.low), space.low, -1.0)
    high = np.where(np.isfinite(space.high), space.high, 1.0)
    return rng.uniform(low, high, (n, *space.shape)).astype(np.float32)


def _bounds(env: HostEnv, obs: Any, where: str, findings: list[Finding]) -> None:
    """A finding for the first observation outside its box (one per run)."""
    if any(f.method == "observation_space" for f in findings):
        return
    spaces = (
        env.observation_space.spaces
        if isinstance(env.observation_space, rspaces.Dict)
        else {"": env.observation_space}
    )
    for key, space in spaces.items():
        value = obs[key] if key else obs
        if not isinstance(space, rspaces.Box):
            continue
        outside = (value < space.low) | (value > space.high)
        if outside.any():
            rows = np.flatnonzero(outside.reshape(len(value), -1).any(axis=1)).tolist()
            label = f"observation {key!r}" if key else "the observation"
            findings.append(Finding(env.name, "observation_space",
                                    f"{where}: {label} of environment(s) {rows} lies outside "
                                    f"its space {space!r}"))  # fmt: skip
            return
