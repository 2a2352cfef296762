"""optax transformations the six shorthands do not cover, as a user writes them: factories of
a learning rate, at the top of a module so that a run's config.json records their import
path (``_optax_factories:accumulated``)."""

from __future__ import annotations

import optax


def clipped_adabelief(learning_rate):
    """AdaBelief after a bound on the gradient's global norm."""
    return optax.chain(optax.clip_by_global_norm(0.5), optax.adabelief(learning_rate))


def accumulated(learning_rate):
    """The same, its gradients accumulated over 2 steps: optax.MultiSteps, with its state."""
    return optax.MultiSteps(clipped_adabelief(learning_rate), every_k_schedule=2)
