"""Maze-v0: a procedurally generated maze with a new random layout every episode.

Every reset carves a new maze (randomized depth-first search on a grid of cells, then a
fraction of the remaining inner walls knocked out so that there are loops), places the goal
on a random cell and the agent on a random cell at least ``min_goal_distance`` cells away
from it. The agent sees only a square window around itself. Generating the layout is a
sequential loop over the cells, so a reset costs far more than a step (the benchmark in
``benchmarks/autoreset.py`` measures it): this is the kind of environment where how resets
are computed matters.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rollax._struct import pytree_dataclass
from rollax.envs._base import Environment, EnvParams
from rollax.spaces import Box, Dict, Discrete

__all__ = ["Maze", "MazeParams", "MazeState"]

# Moves of the actions 0..3, in (row, column) grid units: up, right, down, left.
_MOVES = np.array([[-1, 0], [0, 1], [1, 0], [0, -1]], np.int32)


@pytree_dataclass
class MazeParams(EnvParams):
    """Parameters of the maze's layout distribution and episodes.

    Attributes:
        max_episode_steps: Time limit.
        min_goal_distance: The agent starts at least this many cells (Manhattan distance,
            in cells) from the goal; when no cell is that far, it starts on a farthest cell.
        wall_removal_prob: Probability that each inner wall left by the carving is removed,
            making loops; 0 gives a perfect maze (exactly one path between two cells).
        goal_reward: Reward for reaching the goal, which ends the episode.
        step_reward: Reward of every other step (a small cost by default).
    """

    max_episode_steps: Any = np.int32(200)
    min_goal_distance: Any = np.int32(4)
    wall_removal_prob: Any = np.float32(0.1)
    goal_reward: Any = np.float32(1.0)
    step_reward: Any = np.float32(-0.01)


@pytree_dataclass
class MazeState:
    """A maze and where agent and goal are.

    Attributes:
        walls: uint8 ``(G + 2r, G + 2r)``: 1 for a wall, 0 for free, where ``G = 2 * size + 1``
            is the grid side and ``r = view_size // 2`` a border of walls around it (so the
            view never leaves the array).
        agent: int32 ``(2,)`` row and column of the agent in the padded grid.
        goal: int32 ``(2,)`` row and column of the goal in the padded grid.
    """

    walls: jax.Array
    agent: jax.Array
    goal: jax.Array


class Maze(Environment[MazeState, MazeParams]):
    """Find the goal in a maze seen through a small window.

    Actions: Discrete(4), move up, right, down or left (into a wall: stay). Observation:
    float32 ``(view_size * view_size * 2,)``, the flattened window around the agent with a
    wall channel and a goal channel; with ``pixels``, the same window rendered from above as
    ``{"pixels/view": uint8 (view_size * cell_pixels, view_size * cell_pixels, 3)}``
    (walls dark, free squares light, the goal green, the agent red at the centre).

    Args:
        size: Cells per side; the grid including walls is ``2 * size + 1`` squares wide.
        view_size: Side of the square window the agent sees; odd.
        pixels: Observe the window as a rendered image instead of a vector.
        cell_pixels: Pixels per grid square in the image (``pixels`` only).
    """

    costly_reset = True  # a fresh layout is ~100x a step (benchmarks/autoreset.py)

    def __init__(
        self, size: int = 6, view_size: int = 5, pixels: bool = False, cell_pixels: int = 4
    ) -> None:
        if isinstance(size, bool) or not isinstance(size, int) or size < 2:
            raise ValueError(f"Maze: size must be an integer >= 2, got {size!r}.")
        if isinstance(view_size, bool) or not isinstance(view_size, int) or view_size < 1:
            raise ValueError(f"Maze: view_size must be a positive odd integer, got {view_size!r}.")
        if view_size % 2 == 0:
            raise ValueError(
                f"Maze: view_size must be odd so the agent is at the centre, got {view_size}; "
                f"use {view_size - 1} or {view_size + 1}."
            )
        if not isinstance(pixels, bool):
            raise TypeError(f"Maze: pixels must be a bool, got {pixels!r}.")
        if isinstance(cell_pixels, bool) or not isinstance(cell_pixels, int) or cell_pixels < 1:
            raise ValueError(f"Maze: cell_pixels must be a positive integer, got {cell_pixels!r}.")
        self.size = size
        self.view_size = view_size
        self.pixels = pixels
        self.cell_pixels = cell_pixels

    @property
    def name(self) -> str:
        """``"PixelMaze"`` with ``pixels``, else ``"Maze"``."""
        return "PixelMaze" if self.pixels else "Maze"

    @property
    def grid_side(self) -> int:
        """Squares per side of the grid, walls included (without the view border)."""
        return 2 * self.size + 1

    @property
    def default_params(self) -> MazeParams:
        return MazeParams()

    @property
    def observation_space(self) -> Box | Dict:
        if self.pixels:
            side = self.view_size * self.cell_pixels
            return Dict({"pixels/view": Box(0, 255, (side, side, 3), np.uint8)})
        return Box(0.0, 1.0, (self.view_size * self.view_size * 2,))

    @property
    def action_space(self) -> Discrete:
        return Discrete(4)

    # ------------------------------------------------------------------ layout

    def carve(self, key: jax.Array) -> jax.Array:
        """A perfect maze by randomized depth-first search.

        Returns:
            uint8 ``(grid_side, grid_side)``: 1 for walls, 0 for free squares. Cell ``(i, j)``
            is square ``(2i + 1, 2j + 1)``; the square between two adjacent cells is free
            when the carving passed between them.
        """
        n = self.size
        num_cells = n * n
        moves = jnp.asarray(_MOVES)
        # Each cell is pushed once and popped once: a fixed number of iterations.
        num_iterations = 2 * num_cells - 1
        k_start, k_choice = jax.random.split(key)
        start = jax.random.randint(k_start, (), 0, num_cells)
        choices = jax.random.uniform(k_choice, (num_iterations,))
        grid = jnp.ones((self.grid_side, self.grid_side), jnp.uint8)
        visited = jnp.zeros(num_cells, jnp.bool_).at[start].set(True)
        stack = jnp.zeros(num_cells, jnp.int32).at[0].set(start)
        row, col = jnp.divmod(start, n)
        grid = grid.at[2 * row + 1, 2 * col + 1].set(0)

        def body(i: jax.Array, carry: tuple) -> tuple:
            grid, visited, stack, depth = carry
            current = stack[depth - 1]
            r, c = jnp.divmod(current, n)
            nr, nc = r + moves[:, 0], c + moves[:, 1]
            inside = (nr >= 0) & (nr < n) & (nc >= 0) & (nc < n)
            neighbour = jnp.where(inside, nr * n + nc, 0)
            free = inside & ~visited[neighbour]
            num_free = free.sum()
            # Pick the k-th free neighbour, k uniform in [0, num_free).
            k = jnp.minimum(
                (choices[i] * num_free.astype(jnp.float32)).astype(jnp.int32), num_free - 1
            )
            pick = jnp.argmax(free & (jnp.cumsum(free) == k + 1))
            advance = num_free > 0
            nxt = neighbour[pick]
            wall_r, wall_c = 2 * r + 1 + moves[pick, 0], 2 * c + 1 + moves[pick, 1]
            cell_r, cell_c = 2 * nr[pick] + 1, 2 * nc[pick] + 1
            # Scalar updates only (no whole-grid select): 0 where advancing, else unchanged.
            keep = jnp.where(advance, 0, 1).astype(jnp.uint8)
            grid = grid.at[wall_r, wall_c].min(keep).at[cell_r, cell_c].min(keep)
            visited = visited.at[nxt].set(visited[nxt] | advance)
            stack = stack.at[depth].set(jnp.where(advance, nxt, stack[depth]), mode="drop")
            depth = jnp.where(advance, depth + 1, depth - 1)
            return grid, visited, stack, depth

        grid, *_ = jax.lax.fori_loop(
            0, num_iterations, body, (grid, visited, stack, jnp.ones((), jnp.int32))
        )
        return grid

    def _knock_out_walls(self, key: jax.Array, grid: jax.Array, prob: jax.Array) -> jax.Array:
        """Remove each inner wall between two cells with probability ``prob``."""
        side = self.grid_side
        rows, cols = np.meshgrid(np.arange(side), np.arange(side), indexing="ij")
        inner = (rows > 0) & (rows < side - 1) & (cols > 0) & (cols < side - 1)
        between_cells = inner & ((rows % 2) != (cols % 2))
        knock = jax.random.bernoulli(key, prob, (side, side)) & jnp.asarray(between_cells)
        return jnp.where(knock, jnp.zeros_like(grid), grid)

    def _place(self, key: jax.Array, params: MazeParams) -> tuple[jax.Array, jax.Array]:
        """Goal on a uniform cell; agent on a uniform cell far enough from it (cell coords)."""
        n = self.size
        k_goal, k_agent = jax.random.split(key)
        goal = jax.random.randint(k_goal, (), 0, n * n)
        cells = np.arange(n * n)
        cell_rc = jnp.asarray(np.stack(np.divmod(cells, n), axis=-1), jnp.int32)
        goal_rc = cell_rc[goal]
        distance = jnp.abs(cell_rc - goal_rc[None, :]).sum(-1)
        allowed = distance >= params.min_goal_distance
        allowed = jnp.where(allowed.any(), allowed, distance == distance.max())
        agent = jax.random.categorical(k_agent, jnp.where(allowed, 0.0, -jnp.inf))
        return cell_rc[agent], goal_rc

    # ------------------------------------------------------------------ Environment

    def reset_env(self, key: jax.Array, params: MazeParams) -> MazeState:
        k_carve, k_knock, k_place = jax.random.split(key, 3)
        grid = self.carve(k_carve)
        grid = self._knock_out_walls(k_knock, grid, params.wall_removal_prob)
        border = self.view_size // 2
        walls = jnp.pad(grid, border, constant_values=1)
        agent_cell, goal_cell = self._place(k_place, params)
        return MazeState(walls, 2 * agent_cell + 1 + border, 2 * goal_cell + 1 + border)

    def step_env(
        self, state: MazeState, action: jax.Array, params: MazeParams
    ) -> tuple[MazeState, jax.Array, jax.Array]:
        target = state.agent + jnp.asarray(_MOVES)[action]
        blocked = state.walls[target[0], target[1]] == 1
        agent = jnp.where(blocked, state.agent, target)
        at_goal = jnp.all(agent == state.goal)
        reward = jnp.where(at_goal, params.goal_reward, params.step_reward)
        return state.replace(agent=agent), reward, at_goal

    def observe(self, state: MazeState, params: MazeParams) -> Any:
        walls, goal = self._window(state)
        if self.pixels:
            return {"pixels/view": self.render_view(walls, goal)}
        return jnp.stack([walls.astype(jnp.float32), goal.astype(jnp.float32)], -1).reshape(-1)

    def _window(self, state: MazeState) -> tuple[jax.Array, jax.Array]:
        """The agent's window: walls (uint8) and goal (bool), each ``(view_size, view_size)``."""
        v = self.view_size
        corner = state.agent - v // 2
        walls = jax.lax.dynamic_slice(state.walls, (corner[0], corner[1]), (v, v))
        rows = jnp.arange(v)[:, None] + corner[0]
        cols = jnp.arange(v)[None, :] + corner[1]
        goal = (rows == state.goal[0]) & (cols == state.goal[1])
        return walls, goal

    def render_view(self, walls: jax.Array, goal: jax.Array) -> jax.Array:
        """The window as an image: uint8 ``(view_size * cell_pixels,) * 2 + (3,)``."""
        v = self.view_size
        centre = jnp.zeros((v, v), jnp.bool_).at[v // 2, v // 2].set(True)
        color = _paint(
            [centre, goal, walls.astype(jnp.bool_)],
            [(220, 40, 40), (40, 180, 60), (40, 40, 50)],
            (235, 235, 235),
        )
        cp = self.cell_pixels
        return jnp.repeat(jnp.repeat(color, cp, axis=0), cp, axis=1)

    # ------------------------------------------------------------------ inspection

    def layout(self, state: MazeState) -> jax.Array:
        """The maze grid without the view border: uint8 ``(grid_side, grid_side)``."""
        border = self.view_size // 2
        return state.walls[border : border + self.grid_side, border : border + self.grid_side]

    def render(self, state: MazeState, params: MazeParams, cell_pixels: int = 8) -> jax.Array:
        """The whole maze from above: uint8 ``(G * cell_pixels, G * cell_pixels, 3)``.

        Walls dark, free squares light, the agent's window tinted, the goal green and the agent
        red.
        """
        border = self.view_size // 2
        side = self.grid_side
        rows, cols = jnp.meshgrid(
            jnp.arange(side) + border, jnp.arange(side) + border, indexing="ij"
        )
        walls = self.layout(state).astype(bool)
        in_view = (jnp.abs(rows - state.agent[0]) <= border) & (
            jnp.abs(cols - state.agent[1]) <= border
        )
        agent = (rows == state.agent[0]) & (cols == state.agent[1])
        goal = (rows == state.goal[0]) & (cols == state.goal[1])
        color = _paint(
            [agent, goal, walls, in_view],
            [(220, 40, 40), (40, 180, 60), (40, 40, 50), (250, 235, 190)],
            (235, 235, 235),
        )
        return jnp.repeat(jnp.repeat(color, cell_pixels, axis=0), cell_pixels, axis=1)


def _paint(masks: list[jax.Array], colors: list[tuple], default: tuple) -> jax.Array:
    """uint8 ``(H, W, 3)``: each pixel the colour of the first mask that holds there."""
    out = jnp.broadcast_to(jnp.asarray(default, jnp.uint8), (*masks[0].shape, 3))
    for mask, color in zip(reversed(masks), reversed(colors), strict=True):
        out = jnp.where(mask[..., None], jnp.asarray(color, jnp.uint8), out)
    return out
