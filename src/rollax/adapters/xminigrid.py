"""XLand-MiniGrid's MiniGrid environments inside rollax (extra ``rollax[xminigrid]``).

``rollax.make("xminigrid/<id>")``, one of :func:`xminigrid_ids` (every ``MiniGrid-*`` id of
XLand-MiniGrid: DoorKey, FourRooms, LockedRoom, Memory, Unlock... The ``XLand-MiniGrid-R*``
ids sample their tasks from rulesets that XLand-MiniGrid downloads at run time, so they are
not wrapped), runs XLand-MiniGrid's own ``reset`` and ``step`` with rollax's semantics:

- **Every reset is fresh**: each layout is generated from a key used nowhere else.
  XLand-MiniGrid's own autoreset wrappers derive the next episode's key from the state's.
- **The time limit is rollax's**: XLand-MiniGrid marks its ``max_steps`` with a last step of
  discount 1; here ``XMiniGridParams.max_episode_steps`` (by default the suite's
  ``max_steps``) ends the episode with ``truncated``, and ``terminated`` is the goal reached.
  The success reward, ``1 - 0.9 * steps / max_steps``, reads the suite's ``max_steps``
  (an option of ``rollax.make``).
- **Observations**: the agent's egocentric view, ``(view_size, view_size, 2)`` tile and
  colour ids, flattened into a float32 vector.

XLand-MiniGrid's params (grid size, view size, ``max_steps``) are static, compiled into
the program: they are options of ``rollax.make`` rather than rollax params.
:meth:`XMiniGridEnv.render` draws the whole grid with XLand-MiniGrid's tiles, in ``jit``.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rollax._struct import pytree_dataclass
from rollax.adapters._suite import SuiteEnv, strong, suite_code, unknown_id
from rollax.envs import EnvParams
from rollax.spaces import Box, Discrete

__all__ = ["XMiniGridEnv", "XMiniGridParams", "XMiniGridState", "xminigrid_ids"]

PREFIX = "xminigrid/"

TILE_PIXELS = 16
"""Pixels per tile side in :meth:`XMiniGridEnv.render`."""


@pytree_dataclass
class XMiniGridParams(EnvParams):
    """Parameters of an XLand-MiniGrid environment.

    Attributes:
        max_episode_steps: rollax's time limit, the suite's ``max_steps`` by default; int32.
    """

    max_episode_steps: Any = np.int32(100)


@pytree_dataclass
class XMiniGridState:
    """An XLand-MiniGrid environment's state: its ``TimeStep`` (state and observation).

    Attributes:
        inner: XLand-MiniGrid's ``TimeStep``.
    """

    inner: Any


def _names() -> tuple[str, ...]:
    import xminigrid

    return tuple(n for n in xminigrid.registered_environments() if n.startswith("MiniGrid-"))


class XMiniGridEnv(SuiteEnv):
    """An XLand-MiniGrid ``MiniGrid-*`` environment with rollax's semantics.

    Args:
        env_id: A ``MiniGrid-*`` id of XLand-MiniGrid, e.g. ``"MiniGrid-DoorKey-8x8"``.
        **kwargs: XLand-MiniGrid's params (``view_size``, ``max_steps``...), passed to
            ``xminigrid.make``.
    """

    prefix = PREFIX

    def __init__(self, env_id: str, **kwargs: Any) -> None:
        names = _names()
        if env_id not in names:
            raise unknown_id("XLand-MiniGrid", PREFIX, env_id, names)
        import xminigrid

        self.env_id = env_id
        self._env, self._params = xminigrid.make(env_id, **kwargs)
        view = int(self._params.view_size)
        from xminigrid.core.constants import NUM_COLORS, NUM_TILES

        high = np.tile(np.asarray([NUM_TILES - 1, NUM_COLORS - 1], np.float32), view * view)
        self._observation_space = Box(np.zeros_like(high), high, high.shape)
        self._action_space = Discrete(int(self._env.num_actions(self._params)))
        self._tiles: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def default_params(self) -> XMiniGridParams:
        return XMiniGridParams(max_episode_steps=np.int32(self._params.max_steps))

    def reset_env(self, key: jax.Array, params: XMiniGridParams) -> XMiniGridState:
        with suite_code():
            timestep = self._env.reset(self._params, key)
        return XMiniGridState(strong(timestep))

    def step_env(
        self, state: XMiniGridState, action: jax.Array, params: XMiniGridParams
    ) -> tuple[XMiniGridState, jax.Array, jax.Array]:
        with suite_code():
            timestep = self._env.step(self._params, state.inner, jnp.asarray(action, jnp.int32))
        # A last step with discount 0 is the goal; one with discount 1 the suite's time limit,
        # which rollax's max_episode_steps replaces.
        terminated = timestep.last() & (timestep.discount == 0)
        return (
            XMiniGridState(strong(timestep)),
            jnp.asarray(timestep.reward, jnp.float32),
            jnp.asarray(terminated, jnp.bool_),
        )

    def observe(self, state: XMiniGridState, params: XMiniGridParams) -> jax.Array:
        return jnp.asarray(state.inner.observation, jnp.float32).reshape(-1)

    def render(self, state: XMiniGridState, params: XMiniGridParams) -> jax.Array:
        """The whole grid, :data:`TILE_PIXELS` pixels a tile: uint8 ``(H, W, 3)``."""
        tiles, agents = self._tile_pictures()
        grid = state.inner.state.grid  # (rows, cols, 2): tile and colour ids
        agent = state.inner.state.agent
        rows, cols = grid.shape[:2]
        index = grid[..., 0].astype(jnp.int32) * tiles.shape[1] + grid[..., 1].astype(jnp.int32)
        pictures = jnp.asarray(tiles.reshape(-1, TILE_PIXELS, TILE_PIXELS, 3))[index]
        row, col = agent.position[0], agent.position[1]
        with_agent = jnp.asarray(agents.reshape(4, -1, TILE_PIXELS, TILE_PIXELS, 3))[
            agent.direction, index[row, col]
        ]
        pictures = pictures.at[row, col].set(with_agent)
        return pictures.transpose(0, 2, 1, 3, 4).reshape(rows * TILE_PIXELS, cols * TILE_PIXELS, 3)

    def _tile_pictures(self) -> tuple[np.ndarray, np.ndarray]:
        """Every tile drawn by XLand-MiniGrid, without and with the agent in each direction."""
        if self._tiles is None:
            from xminigrid.core.constants import TILES_REGISTRY
            from xminigrid.rendering.rgb_render import render_tile

            registry = np.asarray(TILES_REGISTRY)
            shape = (*registry.shape[:2], TILE_PIXELS, TILE_PIXELS, 3)
            tiles = np.zeros(shape, np.uint8)
            for t in range(shape[0]):
                for c in range(shape[1]):
                    tile = tuple(int(v) for v in registry[t, c])
                    tiles[t, c] = render_tile(tile, None, False, TILE_PIXELS)
            # The agent is drawn only on the tiles it can stand on, as XLand-MiniGrid draws
            # in Python, pixel by pixel (docs/environments.md, XLand-MiniGrid); the others
            # keep the tile's own picture.
            from xminigrid.core.constants import WALKABLE

            agents = np.broadcast_to(tiles, (4, *shape)).copy()
            for t in np.asarray(WALKABLE):
                for c in range(shape[1]):
                    tile = tuple(int(v) for v in registry[t, c])
                    for d in range(4):
                        agents[d, t, c] = render_tile(tile, d, False, TILE_PIXELS)
            self._tiles = (tiles, agents)
        return self._tiles


def xminigrid_ids() -> list[str]:
    """``xminigrid/<id>`` for every wrapped environment (empty without XLand-MiniGrid)."""
    try:
        return [PREFIX + name for name in _names()]
    except ImportError:
        return []
