"""A batch of environments that step on the host, as the learner sees it.

:class:`HostEnv` holds what every host library shares: seeding each environment from one
seed, checking what the environments return against their declared spaces, keeping each
episode's return and length, and turning any failure into a :class:`HostEnvError` that names
the environment and the step (closing the environments first, so no worker outlives it).
A library's backend (:mod:`rollax.host._gymnasium`) supplies ``_reset`` and ``_step``: the
conversion of its autoreset mode into same-step transitions.
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rollax import spaces as rspaces
from rollax.types import TimeStep

__all__ = ["HostEnv", "HostEnvError", "episode_seeds", "set_rows"]


class HostEnvError(RuntimeError):
    """A host environment raised, or returned what its spaces do not allow.

    The message names the environment, the step (steps since the last :meth:`HostEnv.reset`)
    and what was expected; where the environment raised, its traceback is in the message
    and the original exception is the ``__cause__``.
    """


def episode_seeds(seed: int, num_envs: int) -> list[int]:
    """The first episode's seed of each of ``num_envs`` environments, drawn from ``seed``.

    Independent streams of numpy's ``SeedSequence``: environment ``i`` gets the same seed
    for the same ``seed`` on any machine, and no two environments share one.
    """
    return [int(s) for s in np.random.SeedSequence(seed).generate_state(num_envs, np.uint32)]


class HostEnv(abc.ABC):
    """``num_envs`` environments that step on the host: numpy actions in, numpy results out.

    Whatever the host library's autoreset mode, :meth:`step` returns what a rollax
    :class:`~rollax.envs.VecEnv` returns in its same-step mode (a
    :class:`~rollax.types.TimeStep` of numpy arrays, batch axis first):

    - ``obs``: what the policy acts on next, the new episode's first observation where an
      episode ended;
    - ``final_obs``: the observation the transition reached (``obs`` where the episode goes
      on, the episode's last observation where it ended);
    - ``terminated`` apart from ``truncated``;
    - ``info["episode_return"]`` and ``info["episode_length"]``: the current episode's
      totals, this step included.

    Every call of :meth:`step` is one transition of every environment: a reset never costs
    a step or an action.

    Attributes:
        name: What messages call the environments (``"gymnasium/CartPole-v1"``).
        num_envs: Number of environments.
        observation_space: One environment's observations, as a rollax space (float
            observations are float32; images keep their integer dtype, uint8).
        action_space: One environment's actions: :class:`~rollax.spaces.Discrete` (int32
            actions) or :class:`~rollax.spaces.Box` (float32).
    """

    def __init__(
        self,
        name: str,
        num_envs: int,
        observation_space: rspaces.Space,
        action_space: rspaces.Space,
    ) -> None:
        self.name = name
        self.num_envs = int(num_envs)
        self.observation_space = observation_space
        self.action_space = action_space
        self._steps = 0
        self._returns = np.zeros(self.num_envs, np.float32)
        self._lengths = np.zeros(self.num_envs, np.int32)
        self._seed_checked = False
        self._closed = False

    # What a library's backend supplies.

    @abc.abstractmethod
    def _reset(self, seeds: list[int]) -> Any:
        """Reset every environment, environment ``i`` with ``seeds[i]``; the observations."""

    @abc.abstractmethod
    def _step(self, actions: Any) -> tuple[Any, Any, Any, Any, Any]:
        """Step every environment: ``(obs, reward, terminated, truncated, final_obs)``.

        Same-step: ``obs`` is the new episode's first observation where one ended.
        """

    @abc.abstractmethod
    def _close(self) -> None:
        """Close the library's environments (and end their worker processes)."""

    def render(self) -> Any:
        """The library's frames, where it renders (``None`` otherwise)."""
        return None

    # The contract, the same for every library.

    def reset(self, seed: int) -> Any:
        """Start a new episode in every environment, each seeded from ``seed``.

        The first call also checks that the environments use their seed: two resets with
        the same seeds must give the same observations (a ``reset`` that draws from a
        global generator would make every run different).

        Returns:
            The first observations, ``(num_envs, *observation_space.shape)``.

        Raises:
            HostEnvError: an environment raised, returned observations outside its space, or
                ignores its seed.
        """
        seeds = episode_seeds(seed, self.num_envs)
        obs = self._guarded("reset", self._reset, seeds)
        if not self._seed_checked:
            again = self._guarded("reset", self._reset, seeds)
            if not _same(obs, again):
                self._fail(
                    "reset ignores its seed: two resets with the same seeds gave different "
                    "observations. Draw the episode's randomness from the seed reset is given "
                    "(in Gymnasium: call super().reset(seed=seed) and use self.np_random), so "
                    "that a run is reproducible from its seed"
                )
            self._seed_checked = True
            obs = again
        self._steps = 0
        self._returns[:] = 0
        self._lengths[:] = 0
        return self._checked_obs(obs, "reset")

    def step(self, actions: Any) -> TimeStep:
        """One transition of every environment.

        Args:
            actions: ``(num_envs, *action_space.shape)``: int for a discrete space, float for
                a box (clipped to its bounds, as the library may not accept others).

        Returns:
            A :class:`~rollax.types.TimeStep` of numpy arrays (see the class docstring).

        Raises:
            HostEnvError: an environment raised (or its worker process died), or returned
                what its spaces do not allow.
        """
        actions = np.asarray(actions)
        expected = (self.num_envs, *self.action_space.shape)
        if actions.shape != expected:
            raise ValueError(
                f"{self.name}: step(actions) takes shape {expected}, got {actions.shape}."
            )
        if isinstance(self.action_space, rspaces.Box):  # a Gaussian policy samples beyond it
            space = self.action_space
            actions = np.clip(actions, space.low, space.high).astype(space.dtype)
        self._steps += 1
        obs, reward, terminated, truncated, final_obs = self._guarded("step", self._step, actions)
        obs = self._checked_obs(obs, "step")
        final_obs = self._checked_obs(final_obs, "step (the final observation)")
        reward = self._checked_flags(reward, np.float32, "reward")
        terminated = self._checked_flags(terminated, np.bool_, "terminated")
        truncated = self._checked_flags(truncated, np.bool_, "truncated")
        self._returns += reward
        self._lengths += 1
        info = {"episode_return": self._returns.copy(), "episode_length": self._lengths.copy()}
        done = terminated | truncated
        self._returns[done] = 0
        self._lengths[done] = 0
        return TimeStep(obs, reward, terminated, truncated, final_obs, info)

    def close(self) -> None:
        """Close the environments and end their worker processes (idempotent)."""
        if not self._closed:
            self._closed = True
            self._close()

    def __enter__(self) -> HostEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, num_envs={self.num_envs})"

    # Checks.

    def _where(self, doing: str) -> str:
        return f"{self.name}, {doing} at step {self._steps}"

    def _close_quietly(self) -> None:
        """Close before raising, so that no worker outlives the error.

        A failure to close (a worker already dead) must not hide the error itself.
        """
        with contextlib.suppress(Exception):
            self.close()

    def _fail(self, message: str, doing: str = "reset") -> None:
        self._close_quietly()
        raise HostEnvError(f"{self._where(doing)}: {message}.")

    def _guarded(self, doing: str, call: Callable[..., Any], *args: Any) -> Any:
        if self._closed:
            raise HostEnvError(f"{self.name}: {doing} was called after the environments closed.")
        try:
            return call(*args)
        except HostEnvError:
            self._close_quietly()
            raise
        except Exception as err:
            self._close_quietly()
            raise HostEnvError(
                f"{self._where(doing)}: the environment raised {type(err).__name__}: {err}"
            ) from err

    def _checked_obs(self, obs: Any, doing: str) -> Any:
        """``obs`` in the dtypes of :attr:`observation_space`, or a :class:`HostEnvError`."""
        return _conform(obs, self.observation_space, (self.num_envs,), self, doing, "observation")

    def _checked_flags(self, value: Any, dtype: Any, what: str) -> np.ndarray:
        array = np.asarray(value)
        if array.shape != (self.num_envs,):
            self._fail(f"{what} has shape {array.shape}, expected ({self.num_envs},)", "step")
        if dtype is np.float32 and not np.all(np.isfinite(array)):
            bad = np.flatnonzero(~np.isfinite(array)).tolist()
            self._fail(f"{what} is not finite in environment(s) {bad}: {array[bad]}", "step")
        return array.astype(dtype, copy=False)


def _conform(
    value: Any, space: rspaces.Space, batch: tuple[int, ...], env: HostEnv, doing: str, what: str
) -> Any:
    """``value`` cast to ``space``'s dtype after checking its shape, kind and finiteness."""
    if isinstance(space, rspaces.Dict):
        if not isinstance(value, dict) or set(value) != set(space.keys()):
            keys = sorted(value) if isinstance(value, dict) else type(value).__name__
            env._fail(f"the {what} is {keys}, expected a dict of {sorted(space.keys())}", doing)
        return {k: _conform(value[k], s, batch, env, doing, f"{what} {k!r}")
                for k, s in space.spaces.items()}  # fmt: skip
    array = np.asarray(value)
    expected = (*batch, *space.shape)
    if array.shape != expected:
        env._fail(f"the {what} has shape {array.shape}, expected {expected} ({space!r})", doing)
    integer = np.issubdtype(space.dtype, np.integer)
    if integer and not (np.issubdtype(array.dtype, np.integer) or array.dtype == np.bool_):
        env._fail(f"the {what} has dtype {array.dtype}, expected integers ({space!r})", doing)
    if not integer and not (np.issubdtype(array.dtype, np.number) or array.dtype == np.bool_):
        env._fail(f"the {what} has dtype {array.dtype}, expected numbers ({space!r})", doing)
    if np.issubdtype(array.dtype, np.floating) and not np.all(np.isfinite(array)):
        rows = np.flatnonzero(~np.isfinite(array.reshape(len(array), -1)).all(axis=1)).tolist()
        env._fail(f"the {what} is not finite (NaN or inf) in environment(s) {rows}", doing)
    return array.astype(space.dtype, copy=False)


def _same(a: Any, b: Any) -> bool:
    """Whether two observations (arrays or dicts of arrays) are equal."""
    if isinstance(a, dict):
        return isinstance(b, dict) and set(a) == set(b) and all(_same(a[k], b[k]) for k in a)
    return np.array_equal(np.asarray(a), np.asarray(b))


def set_rows(target: Any, rows: Sequence[int], source: Sequence[Any]) -> Any:
    """A copy of ``target`` (a batch) with row ``rows[j]`` replaced by ``source[j]``.

    ``source[j]`` is one environment's observation: an array, or a dict of them.
    """
    if isinstance(target, dict):
        return {k: set_rows(v, rows, [s[k] for s in source]) for k, v in target.items()}
    out = np.array(target, copy=True)
    for row, value in zip(rows, source, strict=True):
        out[row] = value
    return out
