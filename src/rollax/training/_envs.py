"""The batch of environments an agent trains on, built from an id or checked as given."""

from __future__ import annotations

from typing import Any

from rollax.envs import VecEnv

__all__ = ["shard_env", "training_env"]


def training_env(
    who: str,
    env: VecEnv | str,
    num_envs: int,
    *,
    frame_stack: int = 1,
    action_repeat: int = 1,
    **make_options: Any,
) -> VecEnv:
    """One shard's training batch: ``num_envs`` environments with same-step autoreset.

    Args:
        who: The agent factory, for messages (``"make_ppo"``).
        env: A registered id, built with ``num_envs``, ``frame_stack`` and
            ``action_repeat``; or a ``VecEnv`` that must already hold ``num_envs``
            environments, wrapped as it should be.
        num_envs: Environments in the batch (``num_envs // num_shards`` of the config: the
            training layer maps the batch over seeds and shards).
        frame_stack: Observations stacked (``rollax.make``'s option; 1: off).
        action_repeat: Dynamics steps per action (``rollax.make``'s option; 1: off).
        **make_options: Passed to :func:`rollax.make` when ``env`` is an id.

    Raises:
        ValueError: wrappers asked for a ``VecEnv`` that comes built, a batch of the wrong
            size, or an autoreset mode other than same-step (every step must be a real
            transition).
    """
    from rollax.envs import make

    if isinstance(env, str):
        env = make(
            env,
            num_envs=num_envs,
            frame_stack=frame_stack,
            action_repeat=action_repeat,
            **make_options,
        )
    elif (frame_stack, action_repeat) != (1, 1):
        raise ValueError(
            f"{who}: frame_stack={frame_stack} and action_repeat={action_repeat} apply when "
            f"env is an id; a VecEnv comes built, so build it with rollax.make(..., "
            f"frame_stack=..., action_repeat=...) and leave both at 1."
        )
    if env.num_envs != num_envs:
        raise ValueError(
            f"{who}: the environment batch is one shard's, so it must hold num_envs // "
            f"num_shards = {num_envs} environments (the layer maps it over seeds and "
            f"shards), got num_envs={env.num_envs}."
        )
    if env.autoreset_mode != "same_step":
        raise ValueError(
            f"{who}: the agent needs same-step autoreset (every step a real transition), got "
            f"autoreset_mode={env.autoreset_mode!r}."
        )
    return env


def shard_env(who: str, config: Any, env: Any, *, host: bool = False, **make_options: Any) -> Any:
    """One shard's training environments for an agent's configuration.

    :func:`training_env` with ``num_envs // num_shards`` environments and the config's
    ``frame_stack`` and ``action_repeat`` (1 where it has none): the layer, not the agent,
    knows how a seed's environments are split. An environment that steps on the host
    (:func:`rollax.host.is_host_env`, or a built :class:`rollax.host.HostEnv`) becomes every
    member's environments on the host, for an agent that trains on them.

    Args:
        who: The agent factory, for messages (``"make_dqn"``).
        config: The agent's configuration (``num_envs``, ``num_shards``).
        env: A registered id or one shard's ``VecEnv``; or a host environment.
        host: Whether the agent trains on host environments.
        **make_options: Passed to :func:`rollax.make` when ``env`` is an id (to
            :func:`rollax.host.make` for a host environment).

    Returns:
        A ``VecEnv``, or for a host environment a ``rollax.host`` ``MemberEnvs``.

    Raises:
        ValueError: a host environment for an agent that does not train on them, or
            ``acting_lag`` or ``actor_device`` set for an environment written in JAX.
    """
    from rollax.host import HostEnv, is_host_env

    if isinstance(env, HostEnv) or (isinstance(env, str) and is_host_env(env)):
        if not host:
            name = getattr(env, "name", env)
            raise ValueError(
                f"{who}: {name} steps on the host (rollax.host), and this agent does not "
                "train on host environments. Give it an environment "
                "written in JAX (rollax envs lists them)."
            )
        from rollax.host import member_envs

        return member_envs(who, config, env, **make_options)
    apart = {k: getattr(config, k, None) for k in ("acting_lag", "actor_device")}
    if apart["acting_lag"] or apart["actor_device"] is not None:
        raise ValueError(
            f"{who}: acting_lag={apart['acting_lag']!r} and actor_device="
            f"{apart['actor_device']!r} set how environments that step on the host act beside "
            "the learner; environments written in JAX step inside the learner's program. "
            "Leave them at 0 and None."
        )
    return training_env(
        who,
        env,
        config.num_envs // config.with_shards().num_shards,
        frame_stack=getattr(config, "frame_stack", 1),
        action_repeat=getattr(config, "action_repeat", 1),
        **make_options,
    )
