"""A sum tree over a fixed number of non-negative weights, as flat arrays.

The tree backs every non-uniform sampling in :mod:`rollax.buffers`: prioritized replay and
uniform sampling restricted to valid start points. Node ``1`` is the root, node ``i`` has
children ``2i`` and ``2i + 1`` and leaf ``k`` lives at node ``size + k`` where ``size`` is
the number of leaves rounded up to a power of two. Padding leaves keep weight zero.

Setting ``n`` leaves costs ``O(n log size)``; drawing ``n`` indices in proportion to their
weights costs the same. Parents are recomputed from their children, never accumulated, so
float32 sums do not drift however long a buffer runs.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def tree_size(num_leaves: int) -> int:
    """Number of leaves rounded up to a power of two (at least 1)."""
    return 1 << max(0, (int(num_leaves) - 1).bit_length())


def init(num_leaves: int) -> jax.Array:
    """A tree of ``num_leaves`` zero weights: float32 ``(2 * tree_size(num_leaves),)``."""
    return jnp.zeros((2 * tree_size(num_leaves),), jnp.float32)


def total(tree: jax.Array) -> jax.Array:
    """Sum of all weights, float32 ``()``."""
    return tree[1]


def leaves(tree: jax.Array, index: jax.Array) -> jax.Array:
    """Weights of the leaves ``index`` (int32, any shape)."""
    return tree[tree.shape[0] // 2 + index]


def set_leaves(
    tree: jax.Array, index: jax.Array, value: jax.Array, where: jax.Array | None = None
) -> jax.Array:
    """Set the weights of leaves ``index`` (int32 ``(n,)``) to ``value`` (float32 ``(n,)``).

    Entries where ``where`` (bool ``(n,)``) is False are skipped. If an index repeats, one
    of its values is kept and the sums above it stay consistent.
    """
    size = tree.shape[0] // 2
    node = size + index
    if where is not None:
        node = jnp.where(where, node, 0)  # node 0 is unused: writes there change nothing
    tree = tree.at[node].set(value.astype(tree.dtype))
    for _ in range(size.bit_length() - 1):
        node = node // 2
        tree = tree.at[node].set(tree[2 * node] + tree[2 * node + 1])
    return tree


def find(tree: jax.Array, target: jax.Array) -> jax.Array:
    """For each ``target`` in ``[0, total)``, the leaf whose prefix-sum interval holds it.

    Leaves of weight zero are never returned while the total is positive.

    Args:
        tree: the tree.
        target: float32, any shape.

    Returns:
        int32 leaf indices of ``target``'s shape.
    """
    size = tree.shape[0] // 2
    node = jnp.ones(target.shape, jnp.int32)
    for _ in range(size.bit_length() - 1):
        left = tree[2 * node]
        right = tree[2 * node + 1]
        go_right = (target >= left) & (right > 0)
        target = jnp.where(go_right, target - left, target)
        node = 2 * node + go_right.astype(jnp.int32)
    return node - size
