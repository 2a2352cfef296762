"""The Q-network PQN and DQN share, built for an observation space."""

from __future__ import annotations

from typing import Any

from rollax.networks._driven import Network, feedforward_network, recurrent_network
from rollax.networks._q import QNetwork
from rollax.networks._recurrent import RecurrentQNetwork
from rollax.spaces import Space, is_image_key, observation_spec

__all__ = ["q_network"]


def q_network(
    config: Any,
    observation_space: Space,
    num_actions: int,
    *,
    dueling: bool,
    mlp_layer_norm: bool = False,
    encoder: str = "cnn",
    who: str = "make_dqn: DQN",
) -> tuple[Network, Any]:
    """The Q-network for ``observation_space``, and one observation's shape and dtype.

    With ``config.recurrent``, a :class:`~rollax.networks.RecurrentQNetwork` (an MLP of
    ``hidden_sizes`` after the image encoders, then the cell and the Q head, with
    ``unroll``); otherwise a :class:`~rollax.networks.QNetwork`. Either is a
    :class:`~rollax.networks.Network` whose outputs are the Q-values, float32 ``(..., A)``.

    Args:
        config: A configuration with ``hidden_sizes``, ``activation``,
            ``encoder_layer_norm``, ``recurrent`` and ``cell_size`` (DQN's, PQN's).
        observation_space: One environment's observations.
        num_actions: Discrete actions.
        dueling: A dueling head.
        mlp_layer_norm: Layer normalization in each hidden layer of the MLP.
        encoder: Images of dict observations: ``"cnn"`` or ``"flatten"`` (scaled to
            ``[0, 1]`` and flattened).
        who: The agent, for messages.
    """
    spec = observation_spec(observation_space, who)
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
        return recurrent_network(module, "q_values"), spec
    return feedforward_network(QNetwork(**shared)), spec
