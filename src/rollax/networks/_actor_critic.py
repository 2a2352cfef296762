"""An MLP actor-critic for vector observations, discrete or continuous actions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from rollax.networks._distributions import Categorical, DiagGaussian
from rollax.networks._init import orthogonal
from rollax.spaces import Box, Discrete, Space

__all__ = [
    "ACTIVATIONS",
    "Activation",
    "MLP",
    "ActorCritic",
    "action_distribution",
    "action_head",
    "heads",
]

Activation = Literal["tanh", "relu", "gelu", "swish"]
"""The activation names a configuration may give."""

ACTIVATIONS = {"tanh": nn.tanh, "relu": nn.relu, "gelu": nn.gelu, "swish": nn.swish}
"""The activations networks take by name."""


class MLP(nn.Module):
    """Dense layers with an activation between them and orthogonal initialization.

    Attributes:
        hidden_sizes: Width of each hidden layer.
        activation: ``"tanh"``, ``"relu"``, ``"gelu"`` or ``"swish"``.
        layer_norm: Layer normalization of each hidden layer before its activation (PQN's
            network, which learns without target networks).
    """

    hidden_sizes: Sequence[int]
    activation: str = "tanh"
    layer_norm: bool = False

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        """``(..., in) -> (..., hidden_sizes[-1])``."""
        for size in self.hidden_sizes:
            x = nn.Dense(size, kernel_init=orthogonal(np.sqrt(2)))(x)
            if self.layer_norm:
                x = nn.LayerNorm()(x)
            x = ACTIVATIONS[self.activation](x)
        return x


class ActorCritic(nn.Module):
    """Separate actor and critic MLPs.

    The actor outputs logits for a discrete space, or a mean (and a state-independent,
    learned log standard deviation) for a box; the critic outputs one value.

    Attributes:
        action_dim: Number of actions (discrete) or action dimensions (box).
        discrete: Whether the action space is discrete.
        hidden_sizes: Width of each hidden layer, for both networks.
        activation: See :class:`MLP`.
    """

    action_dim: int
    discrete: bool
    hidden_sizes: Sequence[int] = (64, 64)
    activation: str = "tanh"

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        """``obs (..., D) -> (logits_or_mean (..., A), log_std (A,), value (...))``.

        ``log_std`` is zeros (unused) for a discrete space.
        """
        actor = MLP(self.hidden_sizes, self.activation, name="actor_torso")(obs)
        critic = MLP(self.hidden_sizes, self.activation, name="critic_torso")(obs)
        return heads(self, actor, critic, self.action_dim, self.discrete)

    @staticmethod
    def for_space(space: Space, hidden_sizes: Sequence[int], activation: str) -> ActorCritic:
        """The actor-critic for an action space.

        Raises:
            TypeError: for an action space that is neither Discrete nor Box.
        """
        action_dim, discrete = action_head(space)
        return ActorCritic(action_dim, discrete, tuple(hidden_sizes), activation)


def action_head(space: Space) -> tuple[int, bool]:
    """``(action_dim, discrete)`` of the policy head for an action space.

    Raises:
        TypeError: for an action space that is neither Discrete nor a 1-D Box.
    """
    if isinstance(space, Discrete):
        return int(space.n), True
    if isinstance(space, Box) and len(space.shape) == 1:
        return int(space.shape[0]), False
    raise TypeError(
        f"The actor-critics support Discrete and one-dimensional Box action spaces, got {space}."
    )


def heads(
    module: nn.Module, actor: jax.Array, critic: jax.Array, action_dim: int, discrete: bool
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The policy and value heads on the actor's and critic's features, inside ``module``.

    Returns ``(logits_or_mean (..., A), log_std (A,), value (...))``: a learned,
    state-independent ``log_std`` for a box, zeros for a discrete space.
    """
    out = nn.Dense(action_dim, kernel_init=orthogonal(0.01), name="actor_head")(actor)
    if discrete:
        log_std = jnp.zeros((action_dim,), jnp.float32)
    else:
        log_std = module.param("log_std", nn.initializers.zeros, (action_dim,))
    value = nn.Dense(1, kernel_init=orthogonal(1.0), name="critic_head")(critic)
    return out, log_std, value[..., 0]


def action_distribution(
    out: jax.Array, log_std: jax.Array, discrete: bool
) -> Categorical | DiagGaussian:
    """The policy's distribution: categorical over logits, or a diagonal Gaussian."""
    if discrete:
        return Categorical(out)
    return DiagGaussian(out, jnp.broadcast_to(log_std, out.shape))
