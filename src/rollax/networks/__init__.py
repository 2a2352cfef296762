"""Neural networks: MLP torsos and actor-critic heads (Flax linen)."""

from rollax.networks._actor_critic import MLP, ActorCritic, action_distribution
from rollax.networks._distributions import Categorical, DiagGaussian
from rollax.networks._init import orthogonal

__all__ = ["MLP", "ActorCritic", "Categorical", "DiagGaussian", "action_distribution", "orthogonal"]
