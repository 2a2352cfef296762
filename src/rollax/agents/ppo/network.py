"""PPO's actor-critic, as a :class:`~rollax.networks.Network` with outputs ``(dist, value)``.

The rollout, the loss, evaluation and video all call its ``apply(params, obs, carry, first)
-> (carry, distribution, value)``, so a recurrent network only has to fill the same
interface; ``distribution`` is a :class:`~rollax.networks.Categorical` or
:class:`~rollax.networks.DiagGaussian` over the actions, ``value`` float32 of the
observations' leading axes.
"""

from __future__ import annotations

from typing import Any

from rollax.agents.ppo.config import PPOConfig
from rollax.envs import VecEnv
from rollax.networks import (
    ActorCritic,
    Network,
    RecurrentActorCritic,
    VisionActorCritic,
    action_distribution,
    action_head,
    feedforward_network,
    recurrent_network,
)
from rollax.spaces import is_image_key, observation_spec

__all__ = ["actor_critic", "network_for"]


def actor_critic(module: Any) -> Network:
    """A Flax actor-critic as PPO's :class:`~rollax.networks.Network`.

    Args:
        module: An :class:`~rollax.networks.ActorCritic` or
            :class:`~rollax.networks.VisionActorCritic` (``obs -> (out, log_std, value)``), or
            a :class:`~rollax.networks.RecurrentActorCritic` (its ``outputs`` head gives
            them).
    """

    def outputs(out: tuple) -> tuple:
        logits_or_mean, log_std, value = out
        return action_distribution(logits_or_mean, log_std, module.discrete), value

    if isinstance(module, RecurrentActorCritic):
        return recurrent_network(module, "outputs", outputs)
    return feedforward_network(module, outputs)


def network_for(config: PPOConfig, env: VecEnv) -> tuple[Network, Any]:
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
        return actor_critic(module), spec
    if not isinstance(spec, dict):
        if config.actor_keys or config.critic_keys:
            raise ValueError(
                f"make_ppo: actor_keys and critic_keys select entries of dict observations; "
                f"{env.env_id} observes a vector {space!r}. Leave them empty."
            )
        module = ActorCritic.for_space(actions, config.hidden_sizes, config.activation)
        return actor_critic(module), spec
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
    return actor_critic(network), spec
