"""The environment registry: ids, ``make``, ``register`` and ``registered_envs``."""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import importlib.util
import inspect
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from rollax.envs._base import Environment
from rollax.envs._vec_env import AutoresetMode, VecEnv
from rollax.envs.wrappers import ActionRepeat, FrameStack

__all__ = ["EnvSpec", "make", "register", "registered_envs", "spec"]


@dataclasses.dataclass(frozen=True)
class EnvSpec:
    """How to build a registered environment.

    Attributes:
        id: The id passed to :func:`make`, e.g. ``"CartPole-v1"``.
        entry_point: A callable returning an :class:`~rollax.envs.Environment`, or a
            ``"module:attribute"`` string naming one (imported on first use).
        kwargs: Keyword arguments always passed to the entry point; options given to
            :func:`make` override them.
    """

    id: str
    entry_point: Callable[..., Environment] | str
    kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def load(self) -> Callable[..., Environment]:
        """The entry point as a callable, importing it if it was given as a string."""
        if callable(self.entry_point):
            return self.entry_point
        module_name, _, attribute = self.entry_point.partition(":")
        return getattr(importlib.import_module(module_name), attribute)


_REGISTRY: dict[str, EnvSpec] = {}


def register(
    env_id: str,
    entry_point: Callable[..., Environment] | str,
    *,
    overwrite: bool = False,
    **kwargs: Any,
) -> None:
    """Make ``env_id`` available to :func:`make`.

    Args:
        env_id: The new id; a non-empty string.
        entry_point: A callable (usually an :class:`~rollax.envs.Environment` subclass) or a
            ``"module:attribute"`` string.
        overwrite: Replace an existing registration instead of raising.
        **kwargs: Default keyword arguments for the entry point.

    Raises:
        ValueError: if the id is empty or already registered (and ``overwrite`` is false).
        TypeError: if the entry point is neither callable nor a ``"module:attribute"`` string.
    """
    if not isinstance(env_id, str) or not env_id:
        raise ValueError(f"register: env_id must be a non-empty string, got {env_id!r}.")
    if env_id in _REGISTRY and not overwrite:
        raise ValueError(
            f"register: {env_id!r} is already registered; pass overwrite=True to replace it."
        )
    if not callable(entry_point) and not (isinstance(entry_point, str) and ":" in entry_point):
        raise TypeError(
            f"register: entry_point must be callable or a 'module:attribute' string, "
            f"got {entry_point!r}."
        )
    _REGISTRY[env_id] = EnvSpec(env_id, entry_point, MappingProxyType(dict(kwargs)))


def registered_envs() -> tuple[str, ...]:
    """All registered ids, sorted."""
    return tuple(sorted(_REGISTRY))


def spec(env_id: str) -> EnvSpec:
    """The :class:`EnvSpec` of a registered id.

    Raises:
        ValueError: for an unknown id, listing the closest registered ones.
    """
    if not isinstance(env_id, str):
        raise TypeError(f"env_id must be a string, got {type(env_id).__name__} {env_id!r}.")
    namespace = env_id.partition("/")[0]
    if env_id not in _REGISTRY and namespace in _FOREIGN:
        _register_foreign(env_id)
    try:
        return _REGISTRY[env_id]
    except KeyError:
        close = difflib.get_close_matches(env_id, _REGISTRY, n=5, cutoff=0.5)
        hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
        raise ValueError(
            f"Unknown environment id {env_id!r}.{hint} rollax.registered_envs() lists all "
            f"{len(_REGISTRY)} ids."
        ) from None


_FOREIGN = {
    "gymnax": ("gymnax", "rollax.adapters.gymnax:GymnaxEnv"),
    "brax": ("brax", "rollax.adapters.brax:BraxEnv"),
}
"""Namespaces of other libraries' environments: the module each needs and rollax's wrapper."""


def _register_foreign(env_id: str) -> None:
    """Register ``<library>/<name>`` on first use (any of its ids works without listing it)."""
    namespace, _, name = env_id.partition("/")
    module, entry_point = _FOREIGN[namespace]
    if importlib.util.find_spec(module) is None:
        raise ValueError(f"{env_id!r} needs {module}: pip install 'rollax[{namespace}]'.")
    wrapper = EnvSpec(env_id, entry_point).load()
    wrapper(name)  # an unknown name fails here, listing the library's close matches
    _REGISTRY[env_id] = EnvSpec(env_id, wrapper, MappingProxyType({"env_id": name}))


def make(
    env_id: str,
    num_envs: int | None = None,
    *,
    autoreset_mode: AutoresetMode = "same_step",
    reset_strategy: str | None = None,
    block_size: int | None = None,
    refill_size: int | None = None,
    action_repeat: int = 1,
    frame_stack: int = 1,
    **options: Any,
) -> VecEnv:
    """Build a registered environment.

    Args:
        env_id: A registered id, e.g. ``"CartPole-v1"``; see :func:`registered_envs`.
        num_envs: ``None`` for one environment without a batch axis, or the number of
            independent environments in the batch.
        autoreset_mode: ``"same_step"`` (default), ``"next_step"`` or ``"disabled"``; see
            :data:`rollax.envs.AUTORESET_MODES`.
        reset_strategy: How fresh resets are computed, one of
            :data:`rollax.envs.RESET_STRATEGIES`; ``None`` for the default of
            :func:`rollax.envs.default_reset_strategy` (on the CPU ``"pool"`` from 16
            environments, ``"on_done"`` below; on accelerators ``"every_step"``, or
            ``"pool"`` for an environment with a costly reset).
        block_size: ``"compact"`` only: environments reset per block (default derived from
            ``num_envs`` and the episode limit).
        refill_size: ``"pool"`` only: fresh states drawn per refill, at least ``num_envs``
            (default ``max(num_envs, 64)``).
        action_repeat: Repeat each action this many dynamics steps, observing (rendering)
            once per agent step (:class:`~rollax.envs.wrappers.ActionRepeat`); 1: off.
        frame_stack: Observe the last this many observations stacked along the last axis
            (:class:`~rollax.envs.wrappers.FrameStack`, applied after action repeat); 1: off.
        **options: Keyword arguments of the environment's constructor.

    Returns:
        A :class:`VecEnv`.

    Raises:
        ValueError: unknown id, bad ``num_envs``, ``autoreset_mode`` or ``reset_strategy``.
        TypeError: an option the environment does not take.

    Examples:
        >>> import rollax
        >>> rollax.make("CartPole-v1", num_envs=8)
        VecEnv('CartPole-v1', num_envs=8, autoreset_mode='same_step', reset_strategy='pool')
    """
    env_spec = spec(env_id)
    factory = env_spec.load()
    kwargs = {**env_spec.kwargs, **options}
    _check_options(env_id, factory, kwargs)
    for name, value in (("action_repeat", action_repeat), ("frame_stack", frame_stack)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"make({env_id!r}): {name} must be an integer >= 1, got {value!r}.")
    env = factory(**kwargs)
    if action_repeat > 1:
        env = ActionRepeat(env, action_repeat)
    if frame_stack > 1:
        env = FrameStack(env, frame_stack)
    return VecEnv(
        env,
        num_envs=num_envs,
        autoreset_mode=autoreset_mode,
        reset_strategy=reset_strategy,
        env_id=env_id,
        block_size=block_size,
        refill_size=refill_size,
    )


def _check_options(env_id: str, factory: Callable[..., Any], kwargs: Mapping[str, Any]) -> None:
    """Raise a ``TypeError`` naming the valid options if ``factory`` does not take ``kwargs``."""
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):  # builtins without a signature: let the call decide
        return
    parameters = signature.parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return
    valid = sorted(
        p.name
        for p in parameters
        if p.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    )
    unknown = sorted(set(kwargs) - set(valid))
    if unknown:
        raise TypeError(
            f"make({env_id!r}): unknown option(s) {unknown}; "
            + (f"valid options are {valid}." if valid else "this environment takes no options.")
        )
