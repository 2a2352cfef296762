"""PPO's network behind one interface: ``(params, obs, carry, first) -> (carry, dist, value)``.

The rollout, the loss, evaluation and video all call ``PolicyNetwork.apply``, so a
recurrent network only has to fill the same interface: ``carry`` is its hidden state (``()``
for a feed-forward network), and ``first`` (bool, one flag per observation) marks the
observations that open an episode, where a recurrent network starts from a fresh carry.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from rollax.agents.ppo.config import PPOConfig
from rollax.envs import VecEnv
from rollax.networks import (
    ActorCritic,
    RecurrentActorCritic,
    VisionActorCritic,
    action_distribution,
    action_head,
    initial_carry,
    run_cell,
)
from rollax.spaces import is_image_key, observation_spec
from rollax.types import PRNGKey

__all__ = ["PolicyNetwork", "feedforward_network", "network_for", "recurrent_network"]


class PolicyNetwork(NamedTuple):
    """An actor-critic as PPO drives it.

    Attributes:
        init: ``(key, obs) -> params`` for one observation ``obs`` (no batch axis).
        initial_carry: ``batch -> carry``: the carry of ``batch`` environments at an
            episode's start, leaves ``(batch, ...)``; ``()`` for a feed-forward network.
        apply: ``(params, obs, carry, first) -> (carry, distribution, value)``: ``obs``
            leaves ``(B, ...)`` (or ``(T, B, ...)`` for a recurrent network replaying
            sequences), ``first`` bool of the same leading axes; ``distribution`` is a
            :class:`~rollax.networks.Categorical` or :class:`~rollax.networks.DiagGaussian`
            over the actions, ``value`` float32 of the leading axes.
        discrete: Whether the actions are discrete.
    """

    init: Callable[[PRNGKey, Any], Any]
    initial_carry: Callable[[int], Any]
    apply: Callable[[Any, Any, Any, jax.Array], tuple[Any, Any, jax.Array]]
    discrete: bool


def feedforward_network(module: Any) -> PolicyNetwork:
    """A feed-forward Flax actor-critic as a :class:`PolicyNetwork` (``carry = ()``).

    Args:
        module: An :class:`~rollax.networks.ActorCritic` or
            :class:`~rollax.networks.VisionActorCritic`: ``obs -> (out, log_std, value)``.
    """

    def apply(params: Any, obs: Any, carry: Any, first: jax.Array) -> tuple[Any, Any, jax.Array]:
        out, log_std, value = module.apply(params, obs)
        return carry, action_distribution(out, log_std, module.discrete), value

    return PolicyNetwork(
        init=module.init,
        initial_carry=lambda batch: (),
        apply=apply,
        discrete=module.discrete,
    )


def recurrent_network(module: RecurrentActorCritic) -> PolicyNetwork:
    """A :class:`~rollax.networks.RecurrentActorCritic` as a :class:`PolicyNetwork`.

    ``apply`` encodes every observation at once and runs the cell step by step: one step for
    observations ``(B, ...)`` with ``first`` ``(B,)`` (acting), or a scan over sequences
    ``(T, B, ...)`` with ``first`` ``(T, B)`` (the loss's replay). Before each step the
    carry is reset to its initial value where ``first`` is set, so the observation that
    opens an episode always meets a fresh carry, in the rollout and in the replay alike.
    """

    def fresh(batch: int) -> Any:
        return initial_carry(module.cell, module.cell_size, batch)

    def init(key: PRNGKey, obs: Any) -> Any:
        batched = jax.tree.map(lambda x: x[None], obs)
        return module.init(key, batched, fresh(1), jnp.ones(1, jnp.bool_))

    def apply(params: Any, obs: Any, carry: Any, first: jax.Array) -> tuple[Any, Any, jax.Array]:
        features = module.apply(params, obs, method="encode")
        carry, y = run_cell(module, params, features, carry, first)
        out, log_std, value = module.apply(params, y, method="outputs")
        return carry, action_distribution(out, log_std, module.discrete), value

    return PolicyNetwork(init=init, initial_carry=fresh, apply=apply, discrete=module.discrete)


def network_for(config: PPOConfig, env: VecEnv) -> tuple[PolicyNetwork, Any]:
    """The actor-critic for ``env``'s spaces, and one observation's shape and dtype.

    With ``config.recurrent``, a :class:`RecurrentActorCritic` (its encoder reads every
    observation entry). Otherwise vector observations get :class:`ActorCritic`, and dict
    observations (``"pixels/<camera>"`` images and vectors) get :class:`VisionActorCritic`
    reading ``config.actor_keys`` and ``config.critic_keys``.
    """
    space, actions = env.observation_space, env.action_space
    spec = observation_spec(space, "make_ppo: PPO")
    if config.recurrent != "none":
        if config.actor_keys or config.critic_keys:
            raise ValueError(
                f"make_ppo: actor_keys and critic_keys need separate actor and critic "
                f"encoders; the recurrent network (recurrent={config.recurrent!r}) shares one "
                f"encoder and cell. Leave them empty."
            )
        action_dim, discrete = action_head(actions)
        images = (
            {k: s.shape for k, s in spec.items() if is_image_key(k)}
            if isinstance(spec, dict)
            else None
        )
        module = RecurrentActorCritic(
            action_dim=action_dim,
            discrete=discrete,
            cell=config.recurrent,
            cell_size=config.cell_size,
            hidden_sizes=tuple(config.hidden_sizes),
            head_size=config.hidden_sizes[-1],
            activation=config.activation,
            image_shapes=images,
            layer_norm=config.encoder_layer_norm,
            encoder=config.image_encoder,
        )
        return recurrent_network(module), spec
    if not isinstance(spec, dict):
        if config.actor_keys or config.critic_keys:
            raise ValueError(
                f"make_ppo: actor_keys and critic_keys select entries of dict observations; "
                f"{env.env_id} observes a vector {space!r}. Leave them empty."
            )
        module = ActorCritic.for_space(actions, config.hidden_sizes, config.activation)
        return feedforward_network(module), spec
    actor_keys = config.actor_keys or tuple(k for k in spec if k != "privileged_state")
    critic_keys = config.critic_keys or tuple(spec)
    for name, keys in (("actor_keys", actor_keys), ("critic_keys", critic_keys)):
        unknown = sorted(set(keys) - set(spec))
        if unknown or not keys:
            raise ValueError(
                f"make_ppo: PPOConfig.{name} names {unknown or 'no keys'}; {env.env_id} "
                f"observes {sorted(spec)}."
            )
    action_dim, discrete = action_head(actions)
    network = VisionActorCritic(
        action_dim=action_dim,
        discrete=discrete,
        actor_keys=tuple(actor_keys),
        critic_keys=tuple(critic_keys),
        image_shapes={k: s.shape for k, s in spec.items() if is_image_key(k)},
        hidden_sizes=tuple(config.hidden_sizes),
        activation=config.activation,
        layer_norm=config.encoder_layer_norm,
        encoder=config.image_encoder,
    )
    return feedforward_network(network), spec
