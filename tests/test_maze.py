"""Maze-v0: a valid maze every episode, agent and goal placed as promised, and the local view."""

from __future__ import annotations

from collections import deque

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import rollax
from rollax.envs.maze import Maze


def _free_component(grid, start):
    """Squares reachable from ``start`` through free squares (breadth-first search)."""
    seen, queue = {start}, deque([start])
    while queue:
        r, c = queue.popleft()
        for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            nxt = (r + dr, c + dc)
            if grid[nxt] == 0 and nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return seen


@pytest.mark.parametrize("size", [2, 5, 8])
def test_carving_makes_a_perfect_maze(size):
    maze = Maze(size=size)
    grids = np.asarray(jax.jit(jax.vmap(maze.carve))(jax.random.split(jax.random.key(0), 20)))
    for grid in grids:
        assert grid.shape == (2 * size + 1,) * 2
        assert np.all(grid[0] == 1) and np.all(grid[-1] == 1)  # outer walls stay
        assert np.all(grid[:, 0] == 1) and np.all(grid[:, -1] == 1)
        cells = {(2 * i + 1, 2 * j + 1) for i in range(size) for j in range(size)}
        assert all(grid[cell] == 0 for cell in cells)
        # Connected, and a tree: exactly cells - 1 passages between cells.
        assert cells <= _free_component(grid, (1, 1))
        assert (grid == 0).sum() - len(cells) == len(cells) - 1


def test_reset_places_agent_and_goal_far_apart_on_connected_cells(key):
    env = rollax.make("Maze-v0", num_envs=64)
    maze = env.env
    params = env.default_params.replace(min_goal_distance=5)
    state, ts = env.reset(key, params)
    border = maze.view_size // 2
    for i in range(64):
        core = jax.tree.map(lambda x, i=i: np.asarray(x)[i], state.core)
        agent, goal = tuple(core.agent - border), tuple(core.goal - border)
        grid = np.asarray(maze.layout(core))
        assert np.abs(np.subtract(agent, goal)).sum() // 2 >= 5
        assert goal in _free_component(grid, agent)
        assert agent != goal
    assert bool(jax.vmap(env.observation_space.contains)(ts.obs).all())


def test_moves_are_blocked_by_walls_and_the_goal_ends_the_episode(key):
    env = rollax.make("Maze-v0", autoreset_mode="disabled")
    state, _ = env.reset(key)
    core = state.core
    # Build a corridor by hand: agent at (3, 3) of the padded grid, goal two squares right.
    walls = jnp.ones_like(core.walls).at[3, 3:6].set(0)
    core = core.replace(walls=walls, agent=jnp.array([3, 3]), goal=jnp.array([3, 5]))
    state = state.replace(core=core)
    params = env.default_params
    state, ts = env.step(state, jnp.int32(0), params)  # up: a wall
    np.testing.assert_array_equal(state.core.agent, [3, 3])
    assert float(ts.reward) == pytest.approx(-0.01) and not bool(ts.terminated)
    # The goal is in view, two squares right of the centre of the 5x5 window.
    view = np.asarray(ts.obs).reshape(5, 5, 2)
    assert view[2, 4, 1] == 1.0 and view[:, :, 1].sum() == 1.0
    assert view[2, 2, 0] == 0.0 and view[1, 2, 0] == 1.0
    state, ts = env.step(state, jnp.int32(1), params)  # right
    state, ts = env.step(state, jnp.int32(1), params)  # right: the goal
    assert bool(ts.terminated) and float(ts.reward) == pytest.approx(1.0)


def test_maze_options_are_validated():
    with pytest.raises(ValueError, match=r"view_size must be odd.*got 4; use 3 or 5"):
        rollax.make("Maze-v0", view_size=4)
    with pytest.raises(ValueError, match="size must be an integer >= 2, got 1"):
        rollax.make("Maze-v0", size=1)
    env = rollax.make("Maze-v0", size=4, view_size=7)
    assert env.observation_space.shape == (7 * 7 * 2,)


def test_pixel_maze_renders_the_same_window_the_vector_shows():
    vector = rollax.make("Maze-v0", num_envs=8)
    pixels = rollax.make("PixelMaze-v0", num_envs=8)
    space = pixels.observation_space["pixels/view"]
    assert space.shape == (20, 20, 3) and space.dtype == np.uint8
    key = jax.random.key(4)
    (sv, tv), (sp, tp) = vector.reset(key), pixels.reset(key)
    step_v, step_p = jax.jit(vector.step), jax.jit(pixels.step)
    for t in range(30):
        actions = jnp.asarray((np.arange(8) + t) % 4, jnp.int32)
        view = np.asarray(tv.obs).reshape(8, 5, 5, 2)
        image = np.asarray(tp.obs["pixels/view"])
        assert image.dtype == np.uint8 and image.shape == (8, 20, 20, 3)
        cells = image[:, 1::4, 1::4]  # one pixel inside each square of the window
        np.testing.assert_array_equal(cells[:, 2, 2], np.tile([220, 40, 40], (8, 1)))  # agent
        goal = np.all(cells == [40, 180, 60], axis=-1)
        wall = np.all(cells == [40, 40, 50], axis=-1)
        np.testing.assert_array_equal(goal, view[..., 1] == 1)
        np.testing.assert_array_equal(wall, view[..., 0] == 1)
        # Each square is cell_pixels x cell_pixels pixels of one colour.
        np.testing.assert_array_equal(image, np.repeat(np.repeat(cells, 4, 1), 4, 2))
        (sv, tv), (sp, tp) = step_v(sv, actions), step_p(sp, actions)
    with pytest.raises(TypeError, match="pixels must be a bool"):
        rollax.make("Maze-v0", pixels=1)
