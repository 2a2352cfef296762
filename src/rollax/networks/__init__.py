"""Neural networks (Flax linen), and the one interface the agents drive them through.

MLP and CNN torsos, actor-critic heads, recurrent cells, Q-networks; :class:`Network`.
"""

from rollax.networks._actor_critic import (
    ACTIVATIONS,
    MLP,
    Activation,
    ActorCritic,
    action_distribution,
    action_head,
)
from rollax.networks._distributions import Categorical, DiagGaussian, TanhGaussian
from rollax.networks._driven import (
    Network,
    Unrolled,
    feedforward_network,
    no_carry,
    recurrent_network,
)
from rollax.networks._init import orthogonal
from rollax.networks._q import (
    DeterministicActor,
    DoubleQ,
    QNetwork,
    SquashedGaussianActor,
    q_head,
)
from rollax.networks._q_network import q_network
from rollax.networks._recurrent import (
    CELLS,
    Cell,
    RecurrentActorCritic,
    RecurrentQNetwork,
    initial_carry,
    reset_carry,
    run_cell,
)
from rollax.networks._vision import (
    CNNEncoder,
    Conv,
    VisionActorCritic,
    encode_observation,
    image_encoders,
    join_features,
)
from rollax.spaces import is_image_key

__all__ = [
    "ACTIVATIONS",
    "CELLS",
    "Cell",
    "RecurrentActorCritic",
    "RecurrentQNetwork",
    "initial_carry",
    "reset_carry",
    "run_cell",
    "MLP",
    "Network",
    "Unrolled",
    "feedforward_network",
    "no_carry",
    "q_network",
    "recurrent_network",
    "ActorCritic",
    "Activation",
    "CNNEncoder",
    "Conv",
    "Categorical",
    "DeterministicActor",
    "DiagGaussian",
    "DoubleQ",
    "QNetwork",
    "SquashedGaussianActor",
    "TanhGaussian",
    "VisionActorCritic",
    "action_distribution",
    "action_head",
    "encode_observation",
    "image_encoders",
    "join_features",
    "is_image_key",
    "orthogonal",
    "q_head",
]
