"""Environments that step on the host, with rollax's semantics.

These are Gymnasium's environments and a user's own Python simulators.
A :class:`HostEnv` is a batch of environments stepped with numpy. Whatever the library's
autoreset mode, it returns same-step transitions: the true final observation where an
episode ended, termination apart from truncation, and no reset transition, so ``N`` calls of
``step`` are ``N`` transitions of each environment and no action is spent on a reset. Each
environment's first episode is seeded from one seed (:func:`episode_seeds`), and what it
returns is checked against its declared spaces.

:func:`make` builds one (a separate constructor from :func:`rollax.make`, which makes
environments written in JAX). An agent's members (seeds, and each grid point's seeds) share
one :class:`HostEnv`, each with rows of its own: :class:`MemberEnvs` is what an agent's
driver sees of it (:func:`member_envs`, :func:`member_rows`).
"""

from rollax.host._check import check_host_env, is_host_env
from rollax.host._env import HostEnv, HostEnvError, episode_seeds
from rollax.host._make import VECTORIZATIONS, make
from rollax.host._members import HostParams, MemberEnvs, host_seed, member_envs, member_rows
from rollax.host._native import ATARI_GAMES, MUJOCO_TASKS, atari_ids

__all__ = [
    "ATARI_GAMES",
    "MUJOCO_TASKS",
    "VECTORIZATIONS",
    "HostEnv",
    "HostEnvError",
    "HostParams",
    "MemberEnvs",
    "atari_ids",
    "check_host_env",
    "episode_seeds",
    "host_seed",
    "is_host_env",
    "make",
    "member_envs",
    "member_rows",
]
