"""PPO's network behind one interface: ``(params, obs, carry, first) -> (carry, dist, value)``.

The rollout, the loss, evaluation and video all call ``PolicyNetwork.apply``, so a
recurrent network only has to fill the same interface: ``carry`` is its hidden state (``()``
for a feed-forward network), and ``first`` (bool, one flag per observation) marks the
observations that open an episode, where a recurrent network starts from a fresh carry.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax

from rollax.networks import action_distribution
from rollax.types import PRNGKey

__all__ = ["PolicyNetwork", "feedforward_network"]


class PolicyNetwork(NamedTuple):
    """An actor-critic as PPO drives it.

    Attributes:
        init: ``(key, obs) -> params`` for one observation ``obs`` (no batch axis).
        initial_carry: ``batch -> carry``: the carry of ``batch`` environments at an
            episode's start, leaves ``(batch, ...)``; ``()`` for a feed-forward network.
        apply: ``(params, obs, carry, first) -> (carry, distribution, value)``: ``obs``
            leaves ``(B, ...)`` (or ``(T, B, ...)`` for a recurrent network replaying
            sequences), ``first`` bool of the same leading axes; ``distribution`` is a
            :class:`~rollax.networks.Categorical` or :class:`~rollax.networks.DiagGaussian`
            over the actions, ``value`` float32 of the leading axes.
        discrete: Whether the actions are discrete.
    """

    init: Callable[[PRNGKey, Any], Any]
    initial_carry: Callable[[int], Any]
    apply: Callable[[Any, Any, Any, jax.Array], tuple[Any, Any, jax.Array]]
    discrete: bool


def feedforward_network(module: Any) -> PolicyNetwork:
    """A feed-forward Flax actor-critic as a :class:`PolicyNetwork` (``carry = ()``).

    Args:
        module: An :class:`~rollax.networks.ActorCritic` or
            :class:`~rollax.networks.VisionActorCritic`: ``obs -> (out, log_std, value)``.
    """

    def apply(params: Any, obs: Any, carry: Any, first: jax.Array) -> tuple[Any, Any, jax.Array]:
        out, log_std, value = module.apply(params, obs)
        return carry, action_distribution(out, log_std, module.discrete), value

    return PolicyNetwork(
        init=module.init,
        initial_carry=lambda batch: (),
        apply=apply,
        discrete=module.discrete,
    )
