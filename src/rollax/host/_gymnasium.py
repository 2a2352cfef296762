"""Gymnasium's vector environments as a :class:`~rollax.host.HostEnv`, in any autoreset mode.

- ``SAME_STEP``: Gymnasium resets on the step that ends an episode and puts the episode's
  last observation in ``info["final_obs"]``; the backend takes it from there.
- ``NEXT_STEP`` (Gymnasium's default): the step that ends an episode returns its last
  observation, and the *next* step would ignore its action and only reset. The backend
  resets the ended environments at once with a partial reset
  (``reset(options={"reset_mask": done})``), so that step is never taken: no action is
  spent on it and it is never a transition.
- ``DISABLED``: the same partial reset, which the mode asks the user to make.

The partial reset passes no seed, so an environment's later episodes draw from the generator
its first reset seeded, as Gymnasium's own autoreset does: the three modes give the same
transitions, and all follow from the seeds of the first reset.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import traceback
from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv

from rollax import spaces as rspaces
from rollax.host._env import HostEnv, HostEnvError, set_rows

__all__ = ["GymnasiumHostEnv", "GuardedEnv", "from_gymnasium_space"]


def from_gymnasium_space(space: gymnasium.Space, what: str, name: str) -> rspaces.Space:
    """A Gymnasium space as a rollax space, or a ``ValueError`` naming what rollax takes.

    ``Box`` (float bounds as float32, integer ones such as images kept), ``Discrete`` from
    0, and ``Dict`` of those.
    """
    if isinstance(space, gymnasium.spaces.Discrete):
        if int(space.start) != 0:
            raise ValueError(
                f"{name}: the {what} space {space} starts at {int(space.start)}; rollax's "
                "Discrete spaces start at 0 (wrap the environment to shift its "
                f"{'actions' if what == 'action' else 'observations'})."
            )
        return rspaces.Discrete(int(space.n))
    if isinstance(space, gymnasium.spaces.Box):
        integer = np.issubdtype(space.dtype, np.integer)
        dtype = space.dtype if integer else np.float32
        return rspaces.Box(space.low.astype(dtype), space.high.astype(dtype), space.shape, dtype)
    if isinstance(space, gymnasium.spaces.Dict) and what == "observation":
        return rspaces.Dict(
            {k: from_gymnasium_space(s, what, name) for k, s in space.spaces.items()}
        )
    takes = "Box, Discrete or Dict" if what == "observation" else "Discrete or Box"
    raise ValueError(
        f"{name}: rollax's agents take {takes} {what} spaces; the environment's is {space}."
    )


class GuardedEnv(gymnasium.Wrapper):
    """One environment of a vector environment that rollax builds, checked where it runs.

    It runs in the worker process of an ``AsyncVectorEnv``.

    Its errors carry the environment's index, the step and the original traceback, and a
    ``step`` that returns Gym's old four values is named as such, before Gymnasium's own
    unpacking fails with a bare "expected 5".
    """

    def __init__(self, env: gymnasium.Env, name: str, index: int) -> None:
        super().__init__(env)
        self._name, self._index, self._steps = name, index, 0

    def _raise(self, doing: str, err: Exception) -> None:
        trace = "".join(traceback.format_exception(err)).rstrip()
        raise HostEnvError(
            f"{self._name}, environment {self._index}, {doing} at its step {self._steps}: "
            f"it raised {type(err).__name__}: {err}\nIts traceback:\n{trace}"
        ) from err

    def reset(self, **kwargs: Any) -> Any:
        try:
            out = self.env.reset(**kwargs)
        except Exception as err:
            self._raise("reset", err)
        self._steps = 0
        if not (isinstance(out, tuple) and len(out) == 2):
            raise HostEnvError(
                f"{self._name}, environment {self._index}: reset returned "
                f"{type(out).__name__} of length {len(out) if isinstance(out, tuple) else '-'}"
                "; Gymnasium's reset returns (obs, info)."
            )
        self._check_shape(out[0], "reset")
        return out

    def _check_shape(self, obs: Any, doing: str) -> None:
        """Raise where ``obs`` is not shaped as the space says.

        Gymnasium's batching would fail with a bare broadcasting error.
        """
        space = self.observation_space
        if isinstance(space, gymnasium.spaces.Dict):
            pairs = [
                (f"observation {k!r}", obs.get(k) if isinstance(obs, dict) else None, s)
                for k, s in space.spaces.items()
            ]
        else:
            pairs = [("observation", obs, space)]
        for what, value, sub in pairs:
            shape = np.shape(value) if value is not None else None
            if getattr(sub, "shape", None) is not None and shape != sub.shape:
                raise HostEnvError(
                    f"{self._name}, environment {self._index}, {doing} at its step "
                    f"{self._steps}: the {what} has shape {shape}, expected {sub.shape} ({sub})."
                )

    def step(self, action: Any) -> Any:
        self._steps += 1
        try:
            out = self.env.step(action)
        except Exception as err:
            self._raise("step", err)
        if not (isinstance(out, tuple) and len(out) == 5):
            length = len(out) if isinstance(out, tuple) else type(out).__name__
            old = " (Gym's old four values: obs, reward, done, info)" if length == 4 else ""
            raise HostEnvError(
                f"{self._name}, environment {self._index}, step {self._steps}: step returned "
                f"{length} values{old}; Gymnasium's step returns five: (obs, reward, "
                "terminated, truncated, info), with termination apart from truncation."
            )
        self._check_shape(out[0], "step")
        return out


class GymnasiumHostEnv(HostEnv):
    """A Gymnasium ``VectorEnv`` with rollax's semantics, whatever its autoreset mode.

    It may be a ``SyncVectorEnv``, an ``AsyncVectorEnv`` or the user's own (see
    :mod:`rollax.host`).

    Args:
        env: The vector environment; its ``metadata["autoreset_mode"]`` says its mode
            (``NEXT_STEP`` where it says none, as Gymnasium's default).
        name: What messages call it (default: its spec's id).
    """

    def __init__(self, env: VectorEnv, name: str | None = None) -> None:
        if not isinstance(env, VectorEnv):
            raise TypeError(
                f"GymnasiumHostEnv takes a gymnasium.vector.VectorEnv, got "
                f"{type(env).__name__}; for one gymnasium.Env, pass a function that makes it "
                "to rollax.host.make."
            )
        spec = getattr(env, "spec", None)
        name = name or (f"gymnasium/{spec.id}" if spec is not None else type(env).__name__)
        mode = env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
        self.autoreset_mode = AutoresetMode(mode)
        observation_space = from_gymnasium_space(env.single_observation_space, "observation", name)
        action_space = from_gymnasium_space(env.single_action_space, "action", name)
        super().__init__(name, env.num_envs, observation_space, action_space)
        self.env = env
        self._action_dtype = env.single_action_space.dtype

    def _reset(self, seeds: list[int]) -> Any:
        obs, _ = self.env.reset(seed=list(seeds))
        return obs

    def _step(self, actions: Any) -> tuple[Any, Any, Any, Any, Any]:
        result = self.env.step(actions.astype(self._action_dtype, copy=False))
        if not (isinstance(result, tuple) and len(result) == 5):
            length = len(result) if isinstance(result, tuple) else type(result).__name__
            raise HostEnvError(
                f"{self.name}, step at step {self._steps}: the vector environment's step "
                f"returned {length} values; Gymnasium's returns five (obs, rewards, "
                "terminations, truncations, infos)."
            )
        obs, reward, terminated, truncated, info = result
        terminated, truncated = np.asarray(terminated, bool), np.asarray(truncated, bool)
        ended = np.flatnonzero(terminated | truncated)
        if self.autoreset_mode == AutoresetMode.SAME_STEP:
            final_obs = obs
            if len(ended):
                if "final_obs" not in info:
                    raise HostEnvError(
                        f"{self.name}, step at step {self._steps}: environments {ended.tolist()} "
                        "ended in SAME_STEP mode, but info has no 'final_obs' (their last "
                        "observation, which the learner bootstraps from)."
                    )
                final = [info["final_obs"][i] for i in ended]
                final_obs = set_rows(obs, ended.tolist(), final)
            return obs, reward, terminated, truncated, final_obs
        # NEXT_STEP and DISABLED: obs holds the last observation where an episode ended;
        # reset those environments now, so no step is spent on it.
        final_obs = obs
        if len(ended):
            mask = np.zeros(self.num_envs, bool)
            mask[ended] = True
            obs, _ = self.env.reset(options={"reset_mask": mask})
            # A vector env may hand back its own buffer: keep final_obs apart from it.
            final_obs = _copy(final_obs)
        return obs, reward, terminated, truncated, final_obs

    def _close(self) -> None:
        if not _is_async(self.env):
            self.env.close()
            return
        try:
            self.env.close(terminate=True)
        except Exception:  # a worker died mid-call: Gymnasium's close waits on it and fails
            for process in self.env.processes:
                process.terminate()
                process.join(timeout=10)
            for pipe in self.env.parent_pipes:
                if pipe is not None:
                    pipe.close()
            self.env.closed = True  # Gymnasium's __del__ would try again

    def render(self) -> Any:
        return self.env.render()


def _is_async(env: VectorEnv) -> bool:
    return isinstance(env, gymnasium.vector.AsyncVectorEnv)


def _copy(obs: Any) -> Any:
    if isinstance(obs, dict):
        return {k: _copy(v) for k, v in obs.items()}
    return np.array(obs, copy=True)


@dataclasses.dataclass(frozen=True)
class _Factory:
    """A picklable ``() -> gymnasium.Env`` for the ``index``-th environment of a vector env.

    It wraps the environment in :class:`GuardedEnv`; an ``AsyncVectorEnv`` sends it to a
    worker process.
    """

    make: Any
    name: str
    index: int

    def __call__(self) -> gymnasium.Env:
        env = self.make()
        if not isinstance(env, gymnasium.Env):
            raise TypeError(
                f"{self.name}: the environment function returned {type(env).__name__}, not a "
                "gymnasium.Env."
            )
        return GuardedEnv(env, self.name, self.index)


def vector_env(make: Any, num_envs: int, name: str, vectorization: str) -> VectorEnv:
    """``num_envs`` copies of ``make()`` (a ``gymnasium.Env``) in a vector environment.

    A ``SyncVectorEnv``, or for ``vectorization="async"`` an ``AsyncVectorEnv`` with a worker
    process per environment; both in SAME_STEP mode (one call per step). The workers start
    from a fork server (spawned where there is none), never forked from this process: JAX's
    threads would be forked with it, and a fork of a multithreaded process can deadlock.
    """
    factories = [_Factory(make, name, i) for i in range(num_envs)]
    if vectorization == "sync":
        return gymnasium.vector.SyncVectorEnv(factories, autoreset_mode=AutoresetMode.SAME_STEP)
    context = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    return gymnasium.vector.AsyncVectorEnv(
        factories, autoreset_mode=AutoresetMode.SAME_STEP, context=context
    )
