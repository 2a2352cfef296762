"""How an agent acts outside training: the :class:`Policy` evaluation and video drive."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax

from rollax.types import PRNGKey

__all__ = ["Policy", "feedforward_policy"]


class Policy(NamedTuple):
    """How an agent acts outside training (evaluation, video).

    An agent writes it for one seed (``state`` is that seed's slice; no seed axis below);
    ``Agent.policy`` is every seed's at once (a leading ``num_seeds`` axis on ``obs``,
    ``carry``, ``first`` and ``action``).

    Attributes:
        init_carry: ``(state, batch) -> carry``: the recurrent carry of ``batch``
            environments, leaves ``(batch, ...)``; ``()`` for a feed-forward policy.
        act: ``(state, obs, carry, first, key, deterministic) -> (action, carry)``:
            ``obs`` leaves ``(B, ...)``; ``first`` bool ``(B,)`` marks observations that
            start an episode (a recurrent policy resets its carry there); ``action``
            ``(B, ...)``, the policy's mode when ``deterministic``, else a sample.
    """

    init_carry: Callable[[Any, int], Any]
    act: Callable[..., tuple[jax.Array, Any]]


def feedforward_policy(act: Callable[[Any, Any, PRNGKey, bool], jax.Array]) -> Policy:
    """A :class:`Policy` without a carry, from ``act(state, obs, key, deterministic)``."""

    def act_with_carry(
        state: Any, obs: Any, carry: Any, first: jax.Array, key: PRNGKey, deterministic: bool
    ) -> tuple[jax.Array, Any]:
        return act(state, obs, key, deterministic), carry

    return Policy(init_carry=lambda state, batch: (), act=act_with_carry)
