"""Soft actor-critic with truncation-correct targets, on the shared off-policy driver.

``make_sac`` wires SAC's pieces, module-level functions of a :class:`SACParts` (its networks,
action box and optimizer), each callable on one seed's :class:`SACLearner`.
"""

from rollax.agents.sac.agent import (
    SAC,
    SACHyperParams,
    SACLearner,
    SACParts,
    init_sac_learner,
    make_sac,
    sac_act,
    sac_hyperparams,
    sac_learn,
    sample_from_noise,
    sampled_action,
)
from rollax.agents.sac.config import PRESETS, SACConfig
from rollax.agents.sac.losses import sac_actor_loss, sac_alpha_loss, soft_target

__all__ = [
    "PRESETS",
    "SAC",
    "SACConfig",
    "SACHyperParams",
    "SACLearner",
    "SACParts",
    "init_sac_learner",
    "make_sac",
    "sac_act",
    "sac_actor_loss",
    "sac_alpha_loss",
    "sac_hyperparams",
    "sac_learn",
    "sample_from_noise",
    "sampled_action",
    "soft_target",
]
