"""The one gradient step every agent takes: a mean over the seed's shards, then optax.

Hyperparameters that are data (the learning rate, the norm bound) are arguments of each
call, one value per seed: the transformations are built inside the traced step from them,
so changing them never recompiles, and no optax state is edited. The optimizer state is
Adam's (``optax.scale_by_adam``), whose structure does not depend on those values.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import optax

__all__ = ["GradientStep", "polyak"]


def _identity(tree: Any) -> Any:
    return tree


@dataclasses.dataclass(frozen=True)
class GradientStep:
    """Adam with gradient clipping, its gradients averaged over the seed's data shards.

    Attributes:
        mean: The layout's mean over a seed's shards
            (:meth:`rollax.training.Layout.mean`): every shard then takes the same step,
            from the gradient of the seed's whole batch.
        eps: Adam's epsilon.
        clip_value: Each gradient element is clipped to ``[-clip_value, clip_value]`` first
            (``optax.clip``; 0: off). Static.
    """

    mean: Callable[[Any], Any] = _identity
    eps: float = 1e-8
    clip_value: float = 0.0

    def _adam(self) -> optax.GradientTransformation:
        # Hyperparameters as float32 arrays, as optax.inject_hyperparams holds them: XLA
        # then computes the bias corrections exactly as for an injected learning rate.
        b1, b2, eps, eps_root = (jnp.float32(x) for x in (0.9, 0.999, self.eps, 0.0))
        return optax.scale_by_adam(b1=b1, b2=b2, eps=eps, eps_root=eps_root)

    def init(self, params: Any) -> optax.ScaleByAdamState:
        """Adam's state for ``params``."""
        return self._adam().init(params)

    def __call__(
        self,
        params: Any,
        opt_state: optax.ScaleByAdamState,
        grads: Any,
        learning_rate: jax.Array,
        max_grad_norm: jax.Array | None = None,
    ) -> tuple[Any, optax.ScaleByAdamState]:
        """One step: ``(params, opt_state)`` after applying ``grads``.

        Args:
            params: The parameters the gradients are of.
            opt_state: From :meth:`init` or a previous step.
            grads: This shard's gradients (averaged here over the seed's shards).
            learning_rate: float32 ``()``, this seed's learning rate.
            max_grad_norm: float32 ``()``: the averaged gradient is rescaled to at most this
                global norm (``optax.clip_by_global_norm``); ``None``: no bound.
        """
        grads = self.mean(grads)
        empty = optax.EmptyState()
        if self.clip_value:
            grads, _ = optax.clip(self.clip_value).update(grads, empty)
        if max_grad_norm is not None:
            grads, _ = optax.clip_by_global_norm(max_grad_norm).update(grads, empty)
        # optax mixes int32 step counts with float32 (not strict-promotion clean).
        with jax.numpy_dtype_promotion("standard"):
            updates, opt_state = self._adam().update(grads, opt_state)
            updates, _ = optax.scale_by_learning_rate(learning_rate).update(updates, empty)
        return optax.apply_updates(params, updates), opt_state


def polyak(target: Any, online: Any, tau: jax.Array) -> Any:
    """Target parameters moved ``tau`` of the way to ``online`` (``optax.incremental_update``)."""
    return optax.incremental_update(online, target, tau)
