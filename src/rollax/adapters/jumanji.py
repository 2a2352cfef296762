"""Jumanji environments inside rollax (extra ``rollax[jumanji]``).

``rollax.make("jumanji/<id>")``, one of :data:`ENVIRONMENTS` (Jumanji's single-agent
environments with discrete actions that need no download), runs Jumanji's own ``reset`` and
``step`` with rollax's semantics:

- **Every reset is fresh**: Jumanji's generator draws each instance (maze, board, cities,
  items...) from a key used nowhere else, through rollax's reset strategies. Jumanji's own
  ``AutoResetWrapper`` computes a reset for every environment at every step under ``vmap``.
- **The time limit is rollax's.** Jumanji ends an episode at its ``time_limit`` with a
  termination (discount 0), the same as a natural end. Here the suite's limit is lifted
  (constructed at the largest int32) and ``JumanjiParams.max_episode_steps``, by
  default the suite's ``time_limit``, ends the episode with ``truncated``; ``terminated``
  is the suite's natural end alone (an invalid move, a solved puzzle, no action left...).
  Environments without a time limit get rollax's default of 10,000 steps.
- **Actions**: a ``DiscreteArray`` action is a :class:`~rollax.spaces.Discrete`; a
  ``MultiDiscreteArray`` ``[n_1, ..., n_k]`` (BinPack's item and space, Minesweeper's row and
  column...) becomes one ``Discrete(n_1 * ... * n_k)``, unravelled in row-major order, so
  every rollax agent can act in it.
- **Observations**: Jumanji's observation tuple becomes a dict of float32 vectors, one per
  field (``"grid"``, ``"action_mask"``...; nested fields joined with ``/``), each flattened,
  with the bounds of Jumanji's spec. rollax's MLP agents read it as one vector.

Jumanji draws pictures with matplotlib, outside ``jit``: ``render`` is not
defined, so ``eval --video`` asks for an environment that renders.
"""

from __future__ import annotations

import inspect
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rollax._struct import pytree_dataclass
from rollax.adapters._suite import SuiteEnv, strong, suite_code, unknown_id
from rollax.envs import EnvParams
from rollax.spaces import Box, Dict, Discrete

__all__ = ["ENVIRONMENTS", "JumanjiEnv", "JumanjiParams", "JumanjiState", "jumanji_ids"]

PREFIX = "jumanji/"

ENVIRONMENTS: tuple[str, ...] = (
    "BinPack-v2",
    "CVRP-v1",
    "FlatPack-v0",
    "Game2048-v1",
    "GraphColoring-v1",
    "Knapsack-v1",
    "Maze-v0",
    "Minesweeper-v0",
    "PacMan-v1",
    "RubiksCube-partly-scrambled-v0",
    "RubiksCube-v0",
    "SlidingTilePuzzle-v0",
    "Snake-v1",
    "Sudoku-very-easy-v0",
    "TSP-v1",
    "Tetris-v0",
)
"""Jumanji's ids rollax wraps: single agent, discrete actions, nothing to download (Sokoban
reads its levels from the Hugging Face hub; the multi-agent and continuous ones are left out)."""

COSTLY_RESETS: frozenset[str] = frozenset(
    {"Maze-v0", "Minesweeper-v0", "RubiksCube-partly-scrambled-v0", "RubiksCube-v0",
     "SlidingTilePuzzle-v0"}
)  # fmt: skip
"""The environments whose reset costs ten steps or more (``Environment.costly_reset``; the
Environments page, Jumanji, has the figures)."""

NO_LIMIT_STEPS = 10_000
"""rollax's time limit for a Jumanji environment that has none of its own."""

_NO_LIMIT = int(np.iinfo(np.int32).max)


@pytree_dataclass
class JumanjiParams(EnvParams):
    """Parameters of a Jumanji environment (its generator's settings are constructor options).

    Attributes:
        max_episode_steps: rollax's time limit: the suite's ``time_limit`` where it has one,
            else :data:`NO_LIMIT_STEPS`; int32.
    """

    max_episode_steps: Any = np.int32(NO_LIMIT_STEPS)


@pytree_dataclass
class JumanjiState:
    """A Jumanji environment's state.

    Attributes:
        inner: Jumanji's state (it carries Jumanji's own key for random events).
        obs: Its observation, converted: a dict of float32 vectors.
    """

    inner: Any
    obs: Any


class _Bounds:
    """A leaf of the bounds tree: one field's ``low`` and ``high`` (float32, its shape)."""

    def __init__(self, low: np.ndarray, high: np.ndarray) -> None:
        self.low, self.high = low, high


def _bounds(spec: Any) -> Any:
    """The observation spec as a tree of :class:`_Bounds`, shaped like an observation."""
    from jumanji import specs

    if isinstance(spec, specs.BoundedArray):
        shape = tuple(spec.shape)
        low = np.broadcast_to(np.asarray(spec.minimum, np.float32), shape)
        high = np.broadcast_to(np.asarray(spec.maximum, np.float32), shape)
        return _Bounds(low, high)
    if isinstance(spec, specs.Array):
        shape = tuple(spec.shape)
        if np.dtype(spec.dtype) == np.bool_:
            return _Bounds(np.zeros(shape, np.float32), np.ones(shape, np.float32))
        return _Bounds(np.full(shape, -np.inf, np.float32), np.full(shape, np.inf, np.float32))
    return spec._constructor(**{name: _bounds(sub) for name, sub in spec._specs.items()})


def _field(path: tuple) -> str:
    """A field's key: its path's names joined with ``/``."""
    return "/".join(str(getattr(k, "name", getattr(k, "key", getattr(k, "idx", k)))) for k in path)


class JumanjiEnv(SuiteEnv):
    """A Jumanji environment with rollax's semantics.

    Args:
        env_id: One of :data:`ENVIRONMENTS`, e.g. ``"Snake-v1"``.
        **kwargs: Passed to ``jumanji.make`` (the environment's generator and settings).
            ``time_limit`` becomes rollax's default ``max_episode_steps``.
    """

    prefix = PREFIX

    def __init__(self, env_id: str, **kwargs: Any) -> None:
        if env_id not in ENVIRONMENTS:
            raise unknown_id("Jumanji", PREFIX, env_id, ENVIRONMENTS)
        import jumanji
        from jumanji import specs

        self.env_id = env_id
        env = jumanji.make(env_id, **kwargs)
        self.time_limit: int | None = None
        if "time_limit" in inspect.signature(type(env).__init__).parameters:
            self.time_limit = int(env.time_limit)
            env = jumanji.make(env_id, **{**kwargs, "time_limit": _NO_LIMIT})
        self._env = env
        self.costly_reset = env_id in COSTLY_RESETS
        action = self._env.action_spec
        if isinstance(action, specs.MultiDiscreteArray):
            self._nvec: tuple[int, ...] | None = tuple(int(n) for n in np.ravel(action.num_values))
        elif isinstance(action, specs.DiscreteArray):
            self._nvec = None
        else:
            raise TypeError(f"Jumanji's {env_id} acts in {action!r}; rollax wraps discrete ones.")
        n = math.prod(self._nvec) if self._nvec else int(action.num_values)
        self._action_space = Discrete(n)
        flat = jax.tree_util.tree_flatten_with_path(
            _bounds(self._env.observation_spec), is_leaf=lambda x: isinstance(x, _Bounds)
        )[0]
        self._observation_space = Dict(
            {
                _field(path): Box(b.low.reshape(-1), b.high.reshape(-1), (b.low.size,))
                for path, b in flat
            }
        )

    @property
    def default_params(self) -> JumanjiParams:
        return JumanjiParams(max_episode_steps=np.int32(self.time_limit or NO_LIMIT_STEPS))

    def reset_env(self, key: jax.Array, params: JumanjiParams) -> JumanjiState:
        with suite_code():
            inner, timestep = self._env.reset(key)
        return JumanjiState(strong(inner), self._convert(timestep.observation))

    def step_env(
        self, state: JumanjiState, action: jax.Array, params: JumanjiParams
    ) -> tuple[JumanjiState, jax.Array, jax.Array]:
        with suite_code():
            inner, timestep = self._env.step(state.inner, self.suite_action(action))
        # With the time limit lifted, every last step is a natural end.
        return (
            JumanjiState(strong(inner), self._convert(timestep.observation)),
            jnp.asarray(timestep.reward, jnp.float32),
            jnp.asarray(timestep.last(), jnp.bool_),
        )

    def observe(self, state: JumanjiState, params: JumanjiParams) -> Any:
        return state.obs

    def suite_action(self, action: jax.Array) -> jax.Array:
        """Rollax's action as Jumanji's: the index itself, or its ``MultiDiscrete`` digits."""
        action = jnp.asarray(action, jnp.int32)
        if self._nvec is None:
            return action
        return jnp.stack(jnp.unravel_index(action, self._nvec)).astype(jnp.int32)

    def _convert(self, observation: Any) -> dict[str, jax.Array]:
        """Jumanji's observation as a dict of flat float32 vectors."""
        flat = jax.tree_util.tree_flatten_with_path(observation)[0]
        return {_field(path): jnp.asarray(x, jnp.float32).reshape(-1) for path, x in flat}


def jumanji_ids() -> list[str]:
    """``jumanji/<id>`` for every wrapped environment (empty without Jumanji installed)."""
    try:
        import jumanji  # noqa: F401
    except ImportError:
        return []
    return [PREFIX + name for name in ENVIRONMENTS]
