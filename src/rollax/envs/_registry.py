"""The environment registry: ids, ``make``, ``register`` and ``registered_envs``.

Besides registered ids, :func:`make` (and so the command line) takes an environment by
import path, registering it on first use:

- ``"package.module:EnvClass"``: the class (or any callable returning an
  :class:`~rollax.envs.Environment`) of an importable module; options go to its constructor.
- ``"package.module/Forage-v0"``: imports the module, which registers ``Forage-v0``.
- ``"Forage-v0"`` alone, when an installed package declares it in the ``rollax.envs``
  entry-point group (``Forage-v0 = package.module:EnvClass``).
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import importlib.metadata
import importlib.util
import inspect
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from rollax.envs._base import Environment
from rollax.envs._findings import EnvCheckError, spaces_findings
from rollax.envs._vec_env import AutoresetMode, VecEnv
from rollax.envs.wrappers import ActionRepeat, FrameStack

__all__ = [
    "ENTRY_POINT_GROUP",
    "EnvSpec",
    "make",
    "register",
    "registered_envs",
    "spec",
    "suite_envs",
]

ENTRY_POINT_GROUP = "rollax.envs"
"""The entry-point group in which installed packages declare their environments: each entry's
name is an id, its value a ``"module:attribute"`` entry point."""


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
        """The entry point as a callable, importing it if it was given as a string.

        Raises:
            ValueError: a module that cannot be imported or lacks the attribute, naming them.
        """
        if callable(self.entry_point):
            return self.entry_point
        module_name, _, attribute = self.entry_point.partition(":")
        factory = getattr(_import(module_name, self.id), attribute, None)
        if not callable(factory):
            raise ValueError(
                f"Environment {self.id!r}: entry point {self.entry_point!r} names no callable "
                f"{attribute!r} in {module_name!r}."
            )
        return factory


_REGISTRY: dict[str, EnvSpec] = {}


def register(
    env_id: str,
    entry_point: Callable[..., Environment] | str,
    *,
    overwrite: bool = False,
    check: bool = True,
    **kwargs: Any,
) -> None:
    """Make ``env_id`` available to :func:`make`.

    Args:
        env_id: The new id; a non-empty string.
        entry_point: A callable (usually an :class:`~rollax.envs.Environment` subclass) or a
            ``"module:attribute"`` string.
        overwrite: Replace an existing registration instead of raising.
        check: For a callable entry point, build the environment with ``kwargs`` now and run
            the cheap part of :func:`rollax.envs.check_env` (spaces, shapes and dtypes,
            traced only), so a mismatch is a message here rather than an error deep inside
            training. A string entry point is checked by :func:`make` on first use.
        **kwargs: Default keyword arguments for the entry point.

    Raises:
        ValueError: if the id is empty or already registered (and ``overwrite`` is false);
            an :class:`~rollax.envs.EnvCheckError` (a ``ValueError``) listing what does not
            fit.
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
    if check and callable(entry_point):
        try:
            env = entry_point(**kwargs)
        except Exception as e:  # the user's constructor
            raise ValueError(
                f"register({env_id!r}): building {getattr(entry_point, '__name__', entry_point)}"
                f"(**{kwargs}) to check it raised {type(e).__name__}: {e}; give the options "
                "it needs, or register with check=False."
            ) from e
        _check(env_id, env)
    _REGISTRY[env_id] = EnvSpec(env_id, entry_point, MappingProxyType(dict(kwargs)))


_CHECKED: set[tuple[Any, str]] = set()
"""Environments whose spaces were checked: (entry point, options) already seen."""


def _check(env_id: str, env: Environment, factory: Any = None, kwargs: Any = None) -> None:
    """The cheap check of an environment's spaces, once per entry point and options."""
    try:
        seen = (factory, repr(sorted(kwargs.items()))) if factory is not None else None
        hash(seen)
    except TypeError:
        seen = None
    if seen is not None and seen in _CHECKED:
        return
    if not isinstance(env, Environment):
        raise TypeError(
            f"Environment {env_id!r}: its entry point returned a {type(env).__name__}; expected "
            "a rollax.Environment."
        )
    findings = spaces_findings(env, env_id or env.name)
    if findings:
        raise EnvCheckError(findings)
    if seen is not None:
        _CHECKED.add(seen)


def registered_envs() -> tuple[str, ...]:
    """All registered ids, sorted (installed packages' entry points included)."""
    _register_entry_points()
    return tuple(sorted(_REGISTRY))


def spec(env_id: str) -> EnvSpec:
    """The :class:`EnvSpec` of a registered id.

    Raises:
        ValueError: for an unknown id, listing the closest registered ones.
    """
    if not isinstance(env_id, str):
        raise TypeError(f"env_id must be a string, got {type(env_id).__name__} {env_id!r}.")
    if env_id not in _REGISTRY:
        namespace, slash, _ = env_id.partition("/")
        if slash and namespace in _FOREIGN:
            _register_foreign(env_id)
        elif ":" in env_id:
            _register_import_path(env_id)
        elif slash:
            _register_from_module(env_id)
        else:
            _register_entry_points()
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
    suite: (module, f"rollax.adapters.{suite}:{wrapper}", f"rollax.adapters.{suite}:{suite}_ids")
    for suite, module, wrapper in (
        ("gymnax", "gymnax", "GymnaxEnv"),
        ("brax", "brax", "BraxEnv"),
        ("craftax", "craftax", "CraftaxEnv"),
        ("jumanji", "jumanji", "JumanjiEnv"),
        ("xminigrid", "xminigrid", "XMiniGridEnv"),
        ("playground", "mujoco_playground", "PlaygroundEnv"),
    )
}
"""Namespaces of other libraries' environments (each behind the extra of its name): the
module each needs, rollax's wrapper, and the function listing its ids."""


def suite_envs() -> tuple[str, ...]:
    """The ids of the other suites' environments whose libraries are installed, sorted.

    ``rollax.make`` takes them as ``"<suite>/<name>"`` (``"craftax/Craftax-Classic-Symbolic-v1"``,
    ``"gymnax/Breakout-MinAtar"``...); they are not in :func:`registered_envs`, which lists
    rollax's own and the registered ones.
    """
    ids: list[str] = []
    for module, _, lister in _FOREIGN.values():
        if importlib.util.find_spec(module) is not None:
            ids.extend(EnvSpec("", lister).load()())
    return tuple(sorted(ids))


def _import(module: str, env_id: str) -> Any:
    """Import the module an environment names; a ``ValueError`` naming it if that fails."""
    if not module or not all(part.isidentifier() for part in module.split(".")):
        raise ValueError(
            f"Environment {env_id!r}: {module!r} is not a module name; use a registered id, "
            "'package.module:EnvClass' or 'package.module/Env-v0'."
        )
    try:
        return importlib.import_module(module)
    except EnvCheckError:  # its register() found the environment unfit: that says it all
        raise
    except Exception as e:  # the user's module: any error on import is theirs to see
        raise ValueError(
            f"Environment {env_id!r}: cannot import module {module!r}: {type(e).__name__}: {e}"
        ) from e


def _register_import_path(env_id: str) -> None:
    """Register ``"module:attribute"``: the attribute, a callable returning an environment."""
    module, _, attribute = env_id.partition(":")
    found = _import(module, env_id)
    factory = getattr(found, attribute, None)
    if not callable(factory):
        names = sorted(
            n
            for n, v in vars(found).items()
            if isinstance(v, type) and issubclass(v, Environment) and v.__module__ == module
        )
        hint = f" Its environments: {', '.join(names)}." if names else ""
        raise ValueError(
            f"Environment {env_id!r}: module {module!r} has no callable {attribute!r}.{hint}"
        )
    _REGISTRY[env_id] = EnvSpec(env_id, factory)


def _register_from_module(env_id: str) -> None:
    """Register ``"module/Env-v0"``: import the module, which registers ``Env-v0``."""
    module, _, name = env_id.partition("/")
    before = set(_REGISTRY)
    _import(module, env_id)
    if env_id in _REGISTRY:
        return
    if name not in _REGISTRY:
        added = sorted(set(_REGISTRY) - before)
        raise ValueError(
            f"Environment {env_id!r}: importing {module!r} registered no {name!r}"
            + (f"; it registered {', '.join(map(repr, added))}." if added else
               " (it registered nothing: call rollax.register(...) in the module).")
        )  # fmt: skip
    _REGISTRY[env_id] = dataclasses.replace(_REGISTRY[name], id=env_id)


def _register_entry_points() -> None:
    """Register what installed packages declare in the ``rollax.envs`` group.

    Ids already taken are left alone; the packages' modules are imported on first use.
    """
    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if entry.name not in _REGISTRY:
            _REGISTRY[entry.name] = EnvSpec(entry.name, entry.value)


def _register_foreign(env_id: str) -> None:
    """Register ``<library>/<name>`` on first use (any of its ids works without listing it).

    An id the library lists is registered without building its environment (a MuJoCo
    Playground task takes seconds to build, a robot one options to build at all); another is
    built once with no options, which fails naming the library's closest ids.
    """
    namespace, _, name = env_id.partition("/")
    module, entry_point, lister = _FOREIGN[namespace]
    if importlib.util.find_spec(module) is None:
        raise ValueError(f"{env_id!r} needs {module}: pip install 'rollax[{namespace}]'.")
    wrapper = EnvSpec(env_id, entry_point).load()
    if env_id not in EnvSpec("", lister).load()():
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
    check: bool = True,
    **options: Any,
) -> VecEnv:
    """Build a registered environment.

    Args:
        env_id: A registered id, e.g. ``"CartPole-v1"`` (see :func:`registered_envs`), or an
            environment by import path: ``"package.module:EnvClass"`` or
            ``"package.module/Env-v0"`` (see :mod:`rollax.envs`).
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
            once per agent step, episodes as long in dynamics steps as without repeats
            (:class:`~rollax.envs.wrappers.ActionRepeat`); 1: off.
        frame_stack: Observe the last this many observations stacked along the last axis
            (:class:`~rollax.envs.wrappers.FrameStack`, applied after action repeat); 1: off.
        check: Run the cheap part of :func:`rollax.envs.check_env` on the environment
            (spaces, shapes and dtypes of reset, step and observe, traced only; once per
            entry point and options), so a mismatch is a message naming the method.
        **options: Keyword arguments of the environment's constructor.

    Returns:
        A :class:`VecEnv`.

    Raises:
        ValueError: unknown id, bad ``num_envs``, ``autoreset_mode`` or ``reset_strategy``;
            an :class:`~rollax.envs.EnvCheckError` for an environment that does not fit.
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
    if check:
        _check(env_id, env, factory, kwargs)
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
