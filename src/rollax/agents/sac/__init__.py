"""Soft actor-critic with truncation-correct targets, on the shared off-policy driver.

``make_sac`` wires SAC's pieces, the methods of a :class:`SACParts`, each callable on one
seed's :class:`SACLearner`.
"""

from rollax.agents.sac.agent import SAC, SACHyperParams, SACLearner, SACParts, make_sac
from rollax.agents.sac.config import PRESETS, SACConfig
from rollax.agents.sac.losses import sac_actor_loss, sac_alpha_loss, soft_target

__all__ = [
    "PRESETS",
    "SAC",
    "SACConfig",
    "SACHyperParams",
    "SACLearner",
    "SACParts",
    "make_sac",
    "sac_actor_loss",
    "sac_alpha_loss",
    "soft_target",
]
