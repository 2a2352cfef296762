"""Neural networks: MLP and CNN torsos, actor-critic heads (Flax linen)."""

from rollax.networks._actor_critic import MLP, ActorCritic, action_distribution, action_head
from rollax.networks._distributions import Categorical, DiagGaussian
from rollax.networks._init import orthogonal
from rollax.networks._vision import CNNEncoder, Conv, VisionActorCritic
from rollax.spaces import is_image_key

__all__ = [
    "MLP",
    "ActorCritic",
    "CNNEncoder",
    "Conv",
    "Categorical",
    "DiagGaussian",
    "VisionActorCritic",
    "action_distribution",
    "action_head",
    "is_image_key",
    "orthogonal",
]
