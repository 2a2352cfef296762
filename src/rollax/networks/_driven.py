"""One interface for every network an agent drives, feed-forward or recurrent.

``apply(params, obs, carry, first) -> (carry, *outputs)``: ``carry`` is a recurrent
network's hidden state (``()`` for a feed-forward one), and ``first`` (bool, one flag per
observation) marks the observations that open an episode, where a recurrent network starts
from a fresh carry. PPO's actor-critic (outputs: a distribution and a value) and the
Q-network of PQN and DQN (outputs: the Q-values) are both a :class:`Network`, built by
:func:`feedforward_network` or :func:`recurrent_network` around a Flax module.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp

from rollax.networks._recurrent import initial_carry, run_cell
from rollax.types import PRNGKey

__all__ = ["Network", "Unrolled", "feedforward_network", "no_carry", "recurrent_network"]


def no_carry(batch: int) -> tuple:
    """A feed-forward network's carry of ``batch`` environments: ``()``."""
    return ()


class Unrolled(NamedTuple):
    """A recurrent network's head run over time-major sequences ``(T, B, ...)``.

    Attributes:
        outputs: The head's outputs for each step's observation, leading axes ``(T, B)``
            (the Q-network's: float32 Q-values ``(T, B, A)``).
        successor_outputs: The head's outputs for each step's true successor (``next_obs``:
            ``final_obs`` where the step ended an episode), computed with the carry after
            that step: at an episode end, the carry of the episode that ended, never a fresh
            one. ``None`` when no successors were given.
        carry: The carry after the last step, leaves ``(B, ...)``.
    """

    outputs: Any
    successor_outputs: Any
    carry: Any


class Network(NamedTuple):
    """A network as the agents drive it, one step or one sequence at a time.

    Attributes:
        init: ``(key, obs) -> params`` for one observation ``obs`` (no batch axis).
        initial_carry: ``batch -> carry``: the carry of ``batch`` environments at an
            episode's start, leaves ``(batch, ...)``; ``()`` for a feed-forward network.
        apply: ``(params, obs, carry, first) -> (carry, *outputs)``: one step of ``B``
            environments (``obs`` leaves ``(B, ...)``, ``first`` bool ``(B,)``), or for a
            recurrent network also time-major sequences (``obs`` leaves ``(T, B, ...)``,
            ``first`` ``(T, B)``). The outputs have the observations' leading axes: PPO's
            ``(distribution, value)``, the Q-network's ``(q_values,)``.
        unroll: A recurrent network's ``(params, obs, carry, first, next_obs=None) ->``
            :class:`Unrolled` over time-major sequences, with the successors' outputs when
            ``next_obs`` is given; the carry is reset before every step whose ``first`` is
            set, as in ``apply``. ``None`` for a feed-forward network.
    """

    init: Callable[[PRNGKey, Any], Any]
    initial_carry: Callable[[int], Any]
    apply: Callable[..., tuple]
    unroll: Callable[..., Unrolled] | None = None


def feedforward_network(
    module: nn.Module, outputs: Callable[[Any], tuple] = lambda out: (out,)
) -> Network:
    """A feed-forward Flax module as a :class:`Network` (``carry = ()``).

    Args:
        module: Its ``apply(params, obs)`` runs the network on observations ``(B, ...)``.
        outputs: The module's output -> the network's outputs, a tuple (by default the
            output alone, as the Q-network's Q-values).
    """

    def apply(params: Any, obs: Any, carry: Any, first: jax.Array) -> tuple:
        return carry, *outputs(module.apply(params, obs))

    return Network(init=module.init, initial_carry=no_carry, apply=apply)


def recurrent_network(
    module: nn.Module, head: str, outputs: Callable[[Any], tuple] = lambda out: (out,)
) -> Network:
    """A recurrent Flax module as a :class:`Network`, with ``unroll``.

    The module has ``cell`` and ``cell_size`` attributes and the methods ``encode``
    (observations to features), ``step`` (one cell step, resetting the carry where ``first``
    is set) and ``head`` (the cell's outputs to the head's), as
    :class:`~rollax.networks.RecurrentActorCritic` (``"outputs"``) and
    :class:`~rollax.networks.RecurrentQNetwork` (``"q_values"``) have; its ``__call__`` is
    one whole step, for ``init``. ``apply`` and ``unroll`` encode every observation at once
    and run only the cell step by step.

    Args:
        module: The recurrent module.
        head: The name of its head method.
        outputs: The head's output -> the network's outputs, a tuple (by default the head's
            output alone).
    """

    def fresh(batch: int) -> Any:
        return initial_carry(module.cell, module.cell_size, batch)

    def init(key: PRNGKey, obs: Any) -> Any:
        batched = jax.tree.map(lambda x: x[None], obs)
        return module.init(key, batched, fresh(1), jnp.ones(1, jnp.bool_))

    def apply(params: Any, obs: Any, carry: Any, first: jax.Array) -> tuple:
        features = module.apply(params, obs, method="encode")
        carry, y = run_cell(module, params, features, carry, first)
        return carry, *outputs(module.apply(params, y, method=head))

    def unroll(
        params: Any, obs: Any, carry: Any, first: jax.Array, next_obs: Any = None
    ) -> Unrolled:
        features = module.apply(params, obs, method="encode")

        def step(c: Any, xs: tuple) -> tuple:
            features_t, first_t = xs
            c, y = module.apply(params, features_t, c, first_t, method="step")
            return c, (y, c)

        end, (y, carries) = jax.lax.scan(step, carry, (features, first))
        own = module.apply(params, y, method=head)
        if next_obs is None:
            return Unrolled(own, None, end)
        # Every step's successor meets the carry after that step, with no reset.
        t, b = first.shape
        flat = lambda x: x.reshape(t * b, *x.shape[2:])  # noqa: E731
        next_features = flat(module.apply(params, next_obs, method="encode"))
        _, y_next = module.apply(
            params,
            next_features,
            jax.tree.map(flat, carries),
            jnp.zeros(t * b, jnp.bool_),
            method="step",
        )
        successor = module.apply(params, y_next, method=head)
        successor = jax.tree.map(lambda x: x.reshape(t, b, *x.shape[1:]), successor)
        return Unrolled(own, successor, end)

    return Network(init=init, initial_carry=fresh, apply=apply, unroll=unroll)
