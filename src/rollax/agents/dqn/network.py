"""DQN's Q-network behind one interface: ``(params, obs, carry, first) -> (carry, q)``.

Acting, evaluation and video call ``QFunction.apply`` one step at a time, so a recurrent
Q-network fills the same interface as a feed-forward one: ``carry`` is its hidden state
(``()`` for a feed-forward network), and ``first`` (bool, one flag per observation) marks
the observations that open an episode, where a recurrent network starts from a fresh carry.
A recurrent network also ``unroll``s over sampled sequences for the learner.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from rollax.agents._replay import no_carry
from rollax.agents.dqn.config import DQNConfig
from rollax.envs import VecEnv
from rollax.networks import QNetwork, RecurrentQNetwork, initial_carry, run_cell
from rollax.spaces import is_image_key, observation_spec
from rollax.types import PRNGKey

__all__ = ["QFunction", "Unrolled", "feedforward_q", "q_function", "recurrent_q"]


class Unrolled(NamedTuple):
    """A recurrent Q-network run over time-major sequences ``(T, B, ...)``.

    Attributes:
        q: float32 ``(T, B, A)``: the Q-values of each step's observation.
        successor_q: float32 ``(T, B, A)``: the Q-values of each step's true successor
            (``next_obs``: ``final_obs`` where the step ended an episode), computed with the
            carry after that step: at an episode end, the carry of the episode that ended,
            never a fresh one. ``None`` when no successors were given.
        carry: The carry after the last step, leaves ``(B, ...)``.
    """

    q: jax.Array
    successor_q: jax.Array | None
    carry: Any


class QFunction(NamedTuple):
    """A Q-network as DQN drives it.

    Attributes:
        init: ``(key, obs) -> params`` for one observation ``obs`` (no batch axis).
        initial_carry: ``batch -> carry``: the carry of ``batch`` environments at an
            episode's start, leaves ``(batch, ...)``; ``()`` for a feed-forward network.
        apply: ``(params, obs, carry, first) -> (carry, q)``: one step of ``B``
            environments, ``obs`` leaves ``(B, ...)``, ``first`` bool ``(B,)``, ``q``
            float32 ``(B, A)``; a recurrent network also takes time-major sequences
            (``obs`` leaves ``(T, B, ...)``, ``first`` ``(T, B)``, ``q`` ``(T, B, A)``).
        unroll: A recurrent network's ``(params, obs, carry, first, next_obs=None) ->``
            :class:`Unrolled` over time-major sequences: ``obs`` and ``next_obs`` leaves
            ``(T, B, ...)``, ``first`` bool ``(T, B)``, ``carry`` the carry before the first
            step. The carry is reset before every step whose ``first`` is set, as in
            ``apply``. ``None`` for a feed-forward network.
    """

    init: Callable[[PRNGKey, Any], Any]
    initial_carry: Callable[[int], Any]
    apply: Callable[[Any, Any, Any, jax.Array], tuple[Any, jax.Array]]
    unroll: Callable[..., Unrolled] | None


def feedforward_q(module: QNetwork) -> QFunction:
    """A :class:`~rollax.networks.QNetwork` as a :class:`QFunction` (``carry = ()``)."""

    def apply(params: Any, obs: Any, carry: Any, first: jax.Array) -> tuple[Any, jax.Array]:
        return carry, module.apply(params, obs)

    return QFunction(init=module.init, initial_carry=no_carry, apply=apply, unroll=None)


def recurrent_q(module: RecurrentQNetwork) -> QFunction:
    """A :class:`~rollax.networks.RecurrentQNetwork` as a :class:`QFunction`.

    ``unroll`` encodes every observation at once and runs the cell step by step; the
    successors' Q-values take one more cell step from each step's carry, all at once.
    """

    def fresh(batch: int) -> Any:
        return initial_carry(module.cell, module.cell_size, batch)

    def init(key: PRNGKey, obs: Any) -> Any:
        batched = jax.tree.map(lambda x: x[None], obs)
        return module.init(key, batched, fresh(1), jnp.ones(1, jnp.bool_))

    def apply(params: Any, obs: Any, carry: Any, first: jax.Array) -> tuple[Any, jax.Array]:
        if first.ndim == 1:
            return module.apply(params, obs, carry, first)
        features = module.apply(params, obs, method="encode")  # sequences (T, B, ...)
        carry, y = run_cell(module, params, features, carry, first)
        return carry, module.apply(params, y, method="q_values")

    def unroll(
        params: Any, obs: Any, carry: Any, first: jax.Array, next_obs: Any = None
    ) -> Unrolled:
        features = module.apply(params, obs, method="encode")

        def step(c: Any, xs: tuple) -> tuple:
            features_t, first_t = xs
            c, y = module.apply(params, features_t, c, first_t, method="step")
            return c, (y, c)

        end, (y, carries) = jax.lax.scan(step, carry, (features, first))
        q = module.apply(params, y, method="q_values")
        if next_obs is None:
            return Unrolled(q, None, end)
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
        successor_q = module.apply(params, y_next, method="q_values").reshape(t, b, -1)
        return Unrolled(q, successor_q, end)

    return QFunction(init=init, initial_carry=fresh, apply=apply, unroll=unroll)


def q_function(
    config: DQNConfig | Any,
    env: VecEnv,
    num_actions: int,
    *,
    dueling: bool,
    mlp_layer_norm: bool = False,
    encoder: str = "cnn",
    who: str = "make_dqn: DQN",
) -> tuple[QFunction, Any]:
    """The Q-network for ``env``'s observations, and one observation's shape and dtype.

    With ``config.recurrent``, a :class:`~rollax.networks.RecurrentQNetwork` (an MLP of
    ``hidden_sizes`` after the image encoders, then the cell and the Q head); otherwise a
    :class:`~rollax.networks.QNetwork`.

    Args:
        config: A configuration with ``hidden_sizes``, ``activation``,
            ``encoder_layer_norm``, ``recurrent`` and ``cell_size`` (DQN's, PQN's).
        env: One shard's environments.
        num_actions: Discrete actions.
        dueling: A dueling head.
        mlp_layer_norm: Layer normalization in each hidden layer of the MLP.
        encoder: Images of dict observations: ``"cnn"`` or ``"flatten"`` (scaled to
            ``[0, 1]`` and flattened into the MLP).
        who: The agent, for messages.
    """
    spec = observation_spec(env.observation_space, who)
    images = (
        {k: s.shape for k, s in spec.items() if is_image_key(k)} if isinstance(spec, dict) else None
    )
    shared = dict(
        num_actions=num_actions,
        hidden_sizes=tuple(config.hidden_sizes),
        activation=config.activation,
        dueling=dueling,
        image_shapes=images,
        layer_norm=config.encoder_layer_norm,
        mlp_layer_norm=mlp_layer_norm,
        encoder=encoder,
    )
    if config.recurrent != "none":
        module = RecurrentQNetwork(cell=config.recurrent, cell_size=config.cell_size, **shared)
        return recurrent_q(module), spec
    module = QNetwork(**shared)
    return feedforward_q(module), spec
