"""How an on-policy agent cuts one shard's rollout into minibatches, and replays them.

Minibatches are shuffled samples, or shuffled sequences.

A feed-forward network learns from single transitions in any order. A recurrent network
replays sequences: contiguous chunks of ``chunk_length`` steps of one environment, each
from the carry the rollout stored at its start, with the rollout's own pre-step ``first``
flags, so the replay meets the same carries as the rollout did (the first epoch's first
minibatch reproduces the rollout's log-probabilities). An optional burn-in replays the
``burn_in`` steps before a chunk, without gradient, to refresh its start carry under the
current parameters; steps before the rollout's start are skipped (the chunk then starts
from the carry stored at step 0).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from rollax.networks import reset_carry
from rollax.types import PRNGKey

__all__ = [
    "Sequences",
    "replay",
    "rollout_sequences",
    "shuffled_samples",
    "shuffled_sequences",
]


class Sequences(NamedTuple):
    """A rollout's sequences, ``S = (T / chunk_length) * E`` of them, chunk by chunk.

    Attributes:
        steps: The per-step tuple (observations, flags, actions, targets...), leaves
            ``(chunk_length, S, ...)``.
        carry: The carry stored at each sequence's replay start (its burn-in window's first
            step, or the chunk's first step), leaves ``(S, ...)``.
        burn_obs: Observations of each burn-in window, leaves ``(burn_in, S, ...)``
            (``()`` without burn-in).
        burn_first: bool ``(burn_in, S)``: their pre-step ``first`` flags.
        burn_valid: bool ``(burn_in, S)``: the step lies inside the rollout (``False``
            steps leave the carry as it is).
    """

    steps: Any
    carry: Any
    burn_obs: Any = ()
    burn_first: Any = ()
    burn_valid: Any = ()


def shuffled_samples(key: PRNGKey, batch: Any, num_minibatches: int) -> Any:
    """Transitions in a random order, cut into minibatches.

    Args:
        key: The shuffle's key.
        batch: Leaves ``(N, ...)``.
        num_minibatches: ``M``, which divides ``N``.

    Returns:
        Leaves ``(M, N / M, ...)``.
    """
    n = jax.tree.leaves(batch)[0].shape[0]
    order = jax.random.permutation(key, n)
    return jax.tree.map(lambda x: x[order].reshape(num_minibatches, -1, *x.shape[1:]), batch)


def rollout_sequences(
    steps: Any, obs: Any, carries: Any, first: jax.Array, chunk_length: int, burn_in: int
) -> Sequences:
    """A shard's rollout as sequences of ``chunk_length`` steps.

    Args:
        steps: The per-step tuple the loss reads, leaves ``(T, E, ...)``.
        obs: The observations, leaves ``(T, E, ...)`` (for the burn-in windows).
        carries: The carry before each step, leaves ``(T, E, ...)``.
        first: bool ``(T, E)``: each step's pre-step flag (its observation opens an
            episode).
        chunk_length: ``L``, which divides ``T``.
        burn_in: Steps replayed before each chunk without gradient (0: none).

    Returns:
        :class:`Sequences` with ``S = (T / L) * E``; sequence ``k * E + e`` is chunk ``k``
        of environment ``e``.
    """
    t, e = first.shape
    chunks = t // chunk_length
    starts = jnp.arange(chunks) * chunk_length

    def as_sequences(x: jax.Array) -> jax.Array:  # (T, E, ...) -> (L, K * E, ...)
        x = x.reshape(chunks, chunk_length, *x.shape[1:])
        return jnp.swapaxes(x, 0, 1).reshape(chunk_length, chunks * e, *x.shape[3:])

    def at(x: jax.Array, index: jax.Array) -> jax.Array:  # (T, E, ...)[(K,)] -> (K * E, ...)
        return x[index].reshape(chunks * e, *x.shape[2:])

    steps = jax.tree.map(as_sequences, steps)
    if not burn_in:
        return Sequences(steps, jax.tree.map(lambda c: at(c, starts), carries))
    window = starts[:, None] - burn_in + jnp.arange(burn_in)[None, :]  # (K, burn_in)
    inside = window >= 0
    window = jnp.maximum(window, 0)

    def burn(x: jax.Array) -> jax.Array:  # (T, E, ...) -> (burn_in, K * E, ...)
        x = jnp.swapaxes(x[window], 0, 1)  # (burn_in, K, E, ...)
        return x.reshape(burn_in, chunks * e, *x.shape[3:])

    return Sequences(
        steps=steps,
        carry=jax.tree.map(lambda c: at(c, window[:, 0]), carries),
        burn_obs=jax.tree.map(burn, obs),
        burn_first=burn(first),
        burn_valid=jnp.repeat(inside.T, e, axis=1),  # (burn_in, K * E)
    )


def shuffled_sequences(key: PRNGKey, sequences: Sequences, num_minibatches: int) -> Sequences:
    """Sequences in a random order, cut into minibatches of ``S / M`` sequences.

    Returns:
        :class:`Sequences` with a leading minibatch axis ``M``: ``steps`` leaves ``(M, L, S /
        M, ...)``, ``carry`` ``(M, S / M, ...)``, burn-in leaves ``(M, burn_in, S / M, ...)``.
    """
    s = jax.tree.leaves(sequences.carry)[0].shape[0]
    order = jax.random.permutation(key, s)

    def cut(x: jax.Array, axis: int) -> jax.Array:
        x = jnp.take(x, order, axis=axis)
        x = x.reshape(*x.shape[:axis], num_minibatches, -1, *x.shape[axis + 1 :])
        return jnp.moveaxis(x, axis, 0)

    return Sequences(
        steps=jax.tree.map(lambda x: cut(x, 1), sequences.steps),
        carry=jax.tree.map(lambda x: cut(x, 0), sequences.carry),
        burn_obs=jax.tree.map(lambda x: cut(x, 1), sequences.burn_obs),
        burn_first=jax.tree.map(lambda x: cut(x, 1), sequences.burn_first),
        burn_valid=jax.tree.map(lambda x: cut(x, 1), sequences.burn_valid),
    )


def replay(
    network: Any,
    params: Any,
    minibatch: Sequences,
    observe: Callable[[Any], Any] = lambda obs: obs,
    augment: Callable[[Any], Any] | None = None,
) -> tuple[Any, ...]:
    """The network's outputs on a minibatch, as the loss sees them.

    Samples (``steps`` leaves ``(B, ...)``, no carry) go through the network at once.
    Sequences (``steps`` leaves ``(L, S, ...)``) are replayed from their stored start
    carries with their pre-step ``first`` flags, after the burn-in window (if any) has
    refreshed those carries under ``params``, without gradient.

    Args:
        network: The agent's network: ``apply(params, obs, carry, first) -> (carry,
            *outputs)`` (a :class:`~rollax.networks.Network`; PPO's outputs are the distribution
            and the value).
        params: Its parameters.
        minibatch: One minibatch; ``steps[0]`` are the observations, ``steps[1]`` the
            pre-step ``first`` flags.
        observe: Observations as the network reads them (normalization).
        augment: Applied to the observations before ``observe`` (not to burn-in's).

    Returns:
        The network's outputs after the carry (PPO's ``(distribution, value)``), with the
        leading axes of ``steps``.
    """
    carry = minibatch.carry
    if jax.tree.leaves(minibatch.burn_first):

        def burn(c: Any, xs: tuple) -> tuple[Any, None]:
            obs, first, inside = xs
            new = network.apply(params, observe(obs), c, first)[0]
            return reset_carry(c, inside, new), None

        xs = (minibatch.burn_obs, minibatch.burn_first, minibatch.burn_valid)
        carry = jax.lax.stop_gradient(jax.lax.scan(burn, carry, xs)[0])
    obs, first = minibatch.steps[0], minibatch.steps[1]
    if augment is not None:
        obs = augment(obs)
    return network.apply(params, observe(obs), carry, first)[1:]
