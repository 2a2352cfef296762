"""A sum tree over a fixed number of non-negative weights: a tuple of flat float32 levels.

The tree backs every non-uniform sampling in :mod:`rollax.buffers`: prioritized replay and
uniform sampling restricted to valid start points. It is ``BRANCHING``-ary: ``levels[0]``
holds the leaves, ``levels[i][j]`` the sum of ``levels[i - 1][j * BRANCHING : (j + 1) *
BRANCHING]``, and the last level a single entry, the total. Every level below the top is
zero-padded to a multiple of ``BRANCHING``. A wide node keeps the tree shallow (four levels
for a million leaves), and each level is one batched gather, which is what costs on an
accelerator and on XLA:CPU alike.

Setting ``n`` leaves or drawing ``n`` indices costs ``O(n * BRANCHING * depth)``. Parents
are recomputed from their children, never accumulated, so float32 sums do not drift however
long a buffer runs.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

BRANCHING = 32
"""Children per node."""

SumTree = tuple[jax.Array, ...]
"""The levels of a sum tree, leaves first: float32 arrays."""


def level_sizes(num_leaves: int) -> tuple[int, ...]:
    """Sizes of the levels, leaves first, each but the last a multiple of ``BRANCHING``."""
    sizes = []
    size = max(1, int(num_leaves))
    while True:
        parents = -(-size // BRANCHING)
        sizes.append(parents * BRANCHING)
        if parents == 1:
            sizes.append(1)
            return tuple(sizes)
        size = parents


def init(num_leaves: int) -> SumTree:
    """A tree of ``num_leaves`` zero weights."""
    return tuple(jnp.zeros((size,), jnp.float32) for size in level_sizes(num_leaves))


def nbytes(num_leaves: int) -> int:
    """Bytes a tree of ``num_leaves`` leaves occupies."""
    return 4 * sum(level_sizes(num_leaves))


def total(tree: SumTree) -> jax.Array:
    """Sum of all weights, float32 ``()``."""
    return tree[-1][0]


def leaves(tree: SumTree, index: jax.Array) -> jax.Array:
    """Weights of the leaves ``index`` (int32, any shape)."""
    return tree[0][index]


def _children(level: jax.Array, parent: jax.Array) -> jax.Array:
    """``level``'s entries under each ``parent``: ``parent.shape + (BRANCHING,)``."""
    offsets = jnp.arange(BRANCHING, dtype=jnp.int32)
    return level[parent[..., None] * BRANCHING + offsets.reshape((1,) * parent.ndim + (-1,))]


def set_leaves(
    tree: SumTree, index: jax.Array, value: jax.Array, where: jax.Array | None = None
) -> SumTree:
    """Set the weights of leaves ``index`` (int32 ``(n,)``) to ``value`` (float32 ``(n,)``).

    Entries where ``where`` (bool ``(n,)``) is False are skipped. If an index repeats, one
    of its values is kept and the sums above it stay consistent.
    """
    levels = list(tree)
    node = index if where is None else jnp.where(where, index, levels[0].shape[0])
    levels[0] = levels[0].at[node].set(value.astype(jnp.float32), mode="drop")
    for i in range(1, len(levels)):
        node = node // BRANCHING  # skipped entries stay out of range at every level
        parent = jnp.minimum(node, levels[i].shape[0] - 1)
        sums = jnp.sum(_children(levels[i - 1], parent), axis=-1)
        levels[i] = levels[i].at[node].set(sums, mode="drop")
    return tuple(levels)


def find(tree: SumTree, target: jax.Array) -> jax.Array:
    """For each ``target`` in ``[0, total)``, the leaf whose prefix-sum interval holds it.

    Leaves of weight zero are never returned while the total is positive.

    Args:
        tree: the tree.
        target: float32 ``(n,)``.

    Returns:
        int32 ``(n,)`` leaf indices.
    """
    node = jnp.zeros(target.shape, jnp.int32)
    lower = jnp.triu(jnp.ones((BRANCHING, BRANCHING), jnp.float32))  # running sums as a matmul
    for level in reversed(tree[:-1]):
        weights = _children(level, node)
        upto = jnp.matmul(weights, lower, precision=jax.lax.Precision.HIGHEST)
        # Keep the target inside this node's total, which rounding can push it past; then
        # the first child whose running sum passes the target has a positive weight.
        target = jnp.minimum(target, jnp.nextafter(upto[:, -1], jnp.float32(0)))
        passed = upto <= target[:, None]
        child = jnp.sum(passed, axis=-1, dtype=jnp.int32)
        target = target - jnp.sum(jnp.where(passed, weights, jnp.float32(0)), axis=-1)
        node = node * BRANCHING + child
    return node
