"""An agent's members' environments on the host: one :class:`HostEnv`, a share for each member.

An agent trains ``num_members`` members (seeds, and each grid point's seeds in a sweep), each
with ``num_envs`` environments of its own. On the host they are one :class:`HostEnv` of
``num_members * num_envs`` environments, stepped together: member ``m``'s environments are
its rows ``m * num_envs`` to ``(m + 1) * num_envs``. :class:`MemberEnvs` is what an agent's
driver sees of it, the same size and spaces as one member's rollax ``VecEnv``.
"""

from __future__ import annotations

import atexit
import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rollax import spaces as rspaces
from rollax._struct import pytree_dataclass
from rollax.host._env import HostEnv

__all__ = ["HostParams", "MemberEnvs", "host_seed", "member_envs", "member_rows"]


@pytree_dataclass
class HostParams:
    """The environment params of host environments: none.

    A host environment's settings are its constructor's options (``--env-options``), fixed
    for the run; there is nothing to change as data between chunks.
    """


@dataclasses.dataclass(frozen=True, eq=False)
class MemberEnvs:
    """One member's share of a :class:`HostEnv`, as an agent's driver sees its environments.

    Attributes:
        host: The environments of every member, ``num_members * num_envs`` of them.
        num_envs: Environments per member.
        remake: ``(n, **options) -> HostEnv``: ``n`` new environments of the same kind,
            stepped in this process, with further constructor ``options`` (evaluation, and
            video with ``render_mode``); ``None`` where the run was given a built vector
            environment, which cannot be made again.
    """

    host: HostEnv
    num_envs: int
    remake: Callable[..., HostEnv] | None = None
    autoreset_mode: str = "same_step"

    @property
    def env_id(self) -> str:
        """What messages call the environments."""
        return self.host.name

    @property
    def observation_space(self) -> rspaces.Space:
        """One environment's observations."""
        return self.host.observation_space

    @property
    def action_space(self) -> rspaces.Space:
        """One environment's actions."""
        return self.host.action_space

    @property
    def default_params(self) -> HostParams:
        """No params (:class:`HostParams`)."""
        return HostParams()

    @property
    def num_members(self) -> int:
        """Members whose environments ``host`` holds."""
        return self.host.num_envs // self.num_envs


def member_envs(who: str, config: Any, env: Any, **options: Any) -> MemberEnvs:
    """Every member's environments on the host, for an agent's configuration.

    Args:
        who: The agent factory, for messages (``"make_ppo"``).
        config: The agent's configuration: ``num_envs`` per member, ``num_members``, one
            shard (``num_shards``), and ``frame_stack`` and ``action_repeat`` left at 1.
        env: What :func:`rollax.host.make` takes (an id, an import path, a function), or a
            built :class:`HostEnv` of ``num_members * num_envs`` environments.
        **options: :func:`rollax.host.make`'s options (``vectorization``, the
            environment's constructor's keyword arguments).

    Raises:
        ValueError: more than one shard, wrappers rollax would add, or a built
            :class:`HostEnv` of another size.
    """
    from rollax.host._make import make

    name = getattr(env, "name", env)
    shards = config.with_shards().num_shards
    if shards != 1:
        raise ValueError(
            f"{who}: {name} steps on the host, where each member's environments are one "
            f"shard; got num_shards={shards}. Leave num_shards at 1 (and devices at 1)."
        )
    for field in ("frame_stack", "action_repeat"):
        if getattr(config, field, 1) != 1:
            raise ValueError(
                f"{who}: {field}={getattr(config, field)} wraps rollax's own environments; "
                f"{name} steps on the host, so wrap it there (Gymnasium's "
                "FrameStackObservation, or the environment's own frame skip) and leave "
                f"{field} at 1."
            )
    per_member, members = int(config.num_envs), int(config.num_members)
    if isinstance(env, HostEnv):
        if options:
            raise TypeError(f"{who}: a built HostEnv takes no options, got {sorted(options)}.")
        if env.num_envs != per_member * members:
            raise ValueError(
                f"{who}: {env.name} holds {env.num_envs} environments; the configuration "
                f"trains {members} member(s) of num_envs={per_member} each, so it must hold "
                f"{per_member * members}."
            )
        return MemberEnvs(env, per_member)
    host = make(env, per_member * members, **options)
    atexit.register(host.close)  # no worker process outlives the interpreter
    if not (isinstance(env, str) or callable(env)):  # a built vector environment
        return MemberEnvs(host, per_member)
    single = {k: v for k, v in options.items() if k != "vectorization"}
    return MemberEnvs(host, per_member, remake=lambda n, **more: make(env, n, **single, **more))


def host_seed(key: jax.Array) -> int:
    """A host environment's seed drawn from a JAX key: a uint32 as a Python int."""
    return int(jax.random.bits(key, dtype=jnp.uint32))


def member_rows(tree: Any, members: int) -> Any:
    """A host batch's arrays ``(members * n, ...)`` as ``(members, 1, n, ...)``.

    The layout's per-shard leaves with one shard per member.
    """
    return jax.tree.map(lambda x: np.asarray(x).reshape(members, 1, -1, *np.shape(x)[1:]), tree)
