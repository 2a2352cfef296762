"""What the environment checker reports, and its cheap part: spaces, shapes and dtypes.

The cheap part traces an environment's methods and runs nothing: declarations (spaces,
params) and the shapes and dtypes of ``reset_env``, ``step_env`` and ``observe``. It is
:func:`rollax.envs.check_spaces`, the first group of :func:`rollax.envs.check_env`, and what
:func:`rollax.make` and :func:`rollax.register` run on an environment (they sit below the
checker, which makes environments from their ids).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from rollax.envs._base import Environment, EnvParams
from rollax.spaces import Box, Dict, Discrete

__all__ = ["EnvCheckError", "Finding", "spaces_findings"]

_SPACES = (Box, Discrete, Dict)


@dataclasses.dataclass(frozen=True)
class Finding:
    """One way an environment breaks rollax's interface.

    Attributes:
        env_id: The environment checked (its id, or its name).
        method: Where: ``reset_env``, ``step_env``, ``observe``, ``render``,
            ``default_params``, ``observation_space``, ``action_space``, ``final_obs`` or
            ``truncated``.
        message: What was found and what was expected.
    """

    env_id: str
    method: str
    message: str

    def __str__(self) -> str:
        return f"{self.env_id}: {self.method}: {self.message}"


class EnvCheckError(ValueError):
    """An environment failed :func:`~rollax.envs.check_env` (or :func:`rollax.make`'s space check).

    Attributes:
        findings: Every :class:`Finding`, in the order found.
    """

    def __init__(self, findings: list[Finding] | tuple[Finding, ...]) -> None:
        self.findings = tuple(findings)
        lines = "\n".join(f"- {f}" for f in self.findings)
        name = self.findings[0].env_id if self.findings else "the environment"
        super().__init__(
            f"{name} does not fit rollax's environment interface "
            f"({len(self.findings)} finding{'s' * (len(self.findings) != 1)}):\n{lines}"
        )


# ---------------------------------------------------------------------------- helpers


def _spec(space: Any) -> Any:
    """The observations a space describes, as a pytree of ``ShapeDtypeStruct``."""
    if isinstance(space, Dict):
        return {k: _spec(s) for k, s in space.spaces.items()}
    return jax.ShapeDtypeStruct(tuple(space.shape), np.dtype(space.dtype))


def _describe(tree: Any) -> str:
    def one(x: Any) -> str:
        dtype = (
            x.dtype
            if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)
            else np.dtype(x.dtype).name
        )
        return f"{dtype}{tuple(x.shape)}"

    if isinstance(tree, dict):
        return "{" + ", ".join(f"{k!r}: {_describe(v)}" for k, v in sorted(tree.items())) + "}"
    if hasattr(tree, "shape") and hasattr(tree, "dtype"):
        return one(tree)
    leaves = jax.tree.leaves(tree)
    return f"{type(tree).__name__} of {len(leaves)} leaves"


def _mismatch(got: Any, expected: Any) -> str | None:
    """How the shapes and dtypes of ``got`` differ from ``expected`` (``None``: they match)."""
    if jax.tree.structure(got) != jax.tree.structure(expected):
        return f"{_describe(got)}, where the space describes {_describe(expected)}"
    for (path, g), e in zip(
        jax.tree_util.tree_leaves_with_path(got), jax.tree.leaves(expected), strict=True
    ):
        if tuple(g.shape) != tuple(e.shape) or g.dtype != e.dtype:
            where = jax.tree_util.keystr(path)
            return (
                f"{where + ': ' if where else ''}{_describe(g)}, where the space describes "
                f"{_describe(e)}"
            )
    return None


def _error(e: Exception) -> str:
    text = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}: {text}"[:400]


class _Report:
    """Findings collected for one environment."""

    def __init__(self, env_id: str) -> None:
        self.env_id = env_id
        self.findings: list[Finding] = []

    def add(self, method: str, message: str) -> None:
        self.findings.append(Finding(self.env_id, method, message))

    def attempt(self, method: str, what: str, fn: Callable[[], Any]) -> Any:
        """``fn()``, or ``None`` with a finding naming ``method`` if it raises."""
        try:
            return fn()
        except Exception as e:  # the environment's own error, reported with its method
            self.add(method, f"{what} raised {_error(e)}")
            return None


# ---------------------------------------------------------------------------- the checks


def _check_declarations(env: Environment, report: _Report) -> EnvParams | None:
    """Spaces and params: the parts everything else needs."""
    for name in ("observation_space", "action_space"):
        space = report.attempt(name, name, lambda name=name: getattr(env, name))
        if space is not None and not isinstance(space, _SPACES):
            report.add(name, f"is {space!r}; expected a rollax.spaces Box, Discrete or Dict")
    params = report.attempt("default_params", "default_params", lambda: env.default_params)
    if params is None:
        return None
    if not isinstance(params, EnvParams):
        report.add(
            "default_params",
            f"is a {type(params).__name__}; expected a subclass of rollax.EnvParams (a "
            "pytree dataclass with max_episode_steps)",
        )
        return None
    limit = np.asarray(params.max_episode_steps)
    if not np.issubdtype(limit.dtype, np.integer) or limit.ndim or int(limit) < 1:
        report.add(
            "default_params",
            f"max_episode_steps is {limit.tolist()!r} ({limit.dtype.name}); expected a "
            "positive integer scalar such as np.int32(500) (the time limit rollax truncates at)",
        )
    leaves = {
        path[0].name
        for path, _ in jax.tree_util.tree_leaves_with_path(params)
        if path and isinstance(path[0], jax.tree_util.GetAttrKey)
    }
    for field in dataclasses.fields(params):
        if field.name not in leaves and getattr(params, field.name) is not None:
            report.add(
                "default_params",
                f"field {field.name!r} is static (part of the pytree's structure, not data): "
                "a new value compiles reset and step again; declare it as a plain field",
            )
    return params


def _check_shapes(env: Environment, params: EnvParams, report: _Report) -> Any:
    """Trace reset, observe and step (nothing runs); the state, or ``None`` if broken."""
    if not all(isinstance(s, _SPACES) for s in (env.observation_space, env.action_space)):
        return None
    obs_spec = _spec(env.observation_space)
    key = jax.random.key(0)
    state = report.attempt(
        "reset_env", "tracing reset_env(key, params)",
        lambda: jax.eval_shape(env.reset_env, key, params),
    )  # fmt: skip
    if state is None:
        return None
    obs = report.attempt(
        "observe",
        "tracing observe(state, params)",
        lambda: jax.eval_shape(env.observe, state, params),
    )
    if obs is not None and (why := _mismatch(obs, obs_spec)):
        report.add("observe", f"after reset_env, observes {why}")
    action = _spec(env.action_space)
    out = report.attempt(
        "step_env", "tracing step_env(state, action, params)",
        lambda: jax.eval_shape(env.step_env, state, action, params),
    )  # fmt: skip
    if out is None:
        return None
    if not isinstance(out, tuple) or len(out) != 3:
        report.add(
            "step_env", f"returns {_describe(out)}; expected (next_state, reward, terminated)"
        )
        return None
    next_state, reward, terminated = out
    if (tuple(reward.shape), np.dtype(reward.dtype)) != ((), np.dtype(np.float32)):
        report.add("step_env", f"returns a reward of {_describe(reward)}; expected float32()")
    if (tuple(terminated.shape), np.dtype(terminated.dtype)) != ((), np.dtype(bool)):
        report.add("step_env", f"returns terminated as {_describe(terminated)}; expected bool()")
    if why := _mismatch(next_state, state):
        report.add(
            "step_env",
            f"returns a next state that differs from reset_env's in shape or dtype: "
            f"{why.replace('the space describes', 'reset_env gives')} (a state must keep "
            "one structure, shapes and dtypes for jit, scan and autoreset)",
        )
        return None
    obs = report.attempt(
        "observe", "tracing observe(next_state, params)",
        lambda: jax.eval_shape(env.observe, next_state, params),
    )  # fmt: skip
    if obs is not None and (why := _mismatch(obs, obs_spec)):
        report.add("observe", f"after step_env, observes {why}")
    return state


def spaces_findings(env: Environment, name: str) -> tuple[Finding, ...]:
    """The findings of the cheap part (declarations, shapes and dtypes, traced only).

    Args:
        env: The environment.
        name: What the findings call it (its id, or its name).

    Returns:
        The findings (empty when everything fits).
    """
    report = _Report(name)
    params = _check_declarations(env, report)
    if params is not None and not report.findings:
        _check_shapes(env, params, report)
    return tuple(report.findings)
