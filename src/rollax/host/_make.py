"""``rollax.host.make``: a host environment from a Gymnasium id, an import path or a function."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from rollax.host._env import HostEnv

__all__ = ["VECTORIZATIONS", "make"]

VECTORIZATIONS = ("sync", "async")
"""How :func:`make` steps the copies of one ``gymnasium.Env``: one after another in this
process (``"sync"``), or each in a worker process of its own (``"async"``)."""


def make(env: Any, num_envs: int = 1, *, vectorization: str = "sync", **options: Any) -> HostEnv:
    """A batch of environments that step on the host, with rollax's semantics.

    Args:
        env: One of:

            - ``"gymnasium/<id>"``: an environment of Gymnasium's registry
              (``"gymnasium/CartPole-v1"``, ``"gymnasium/HalfCheetah-v5"``);
            - ``"ale/<Game>-v5"``: ALE's ``AtariVectorEnv`` (``rollax[atari]``), frames as
              ``{"pixels/frames": (84, 84, 4)}``;
            - ``"envpool/<Task>"``: an envpool pool (``rollax[envpool]``), its next-step
              resets converted;
            - ``"package.module:Name"``: a ``gymnasium.Env`` class of an importable module,
              or a function returning a ``gymnasium.Env`` or a Gymnasium ``VectorEnv``;
            - such a class or function itself;
            - a Gymnasium ``VectorEnv`` (sync, async or the user's own), in any autoreset
              mode.
        num_envs: How many copies of a ``gymnasium.Env`` to step; a ``VectorEnv`` brings its
            own number (``num_envs`` must then be 1 or equal to it).
        vectorization: ``"sync"`` (the copies step in this process) or ``"async"`` (each in
            a worker process, for environments whose step is slow Python). ALE and envpool
            step in threads of their own (their ``num_threads`` option): ``"sync"``.
        **options: Keyword arguments of the environment's constructor or function (of
            ``gymnasium.make`` for an id, ``AtariVectorEnv`` for ALE, ``envpool.make`` for
            envpool).

    Returns:
        A :class:`~rollax.host.HostEnv`.

    Raises:
        ValueError: an unknown id or import path, a bad ``num_envs`` or ``vectorization``,
            or spaces rollax's agents cannot take.
        TypeError: ``env`` of another type, or a function that returns neither an
            environment nor a vector environment.
    """
    try:
        import gymnasium
    except ImportError:
        raise ValueError(
            f"rollax.host.make({env!r}) needs Gymnasium: pip install 'rollax[gymnasium]'."
        ) from None

    from rollax.host._gymnasium import GymnasiumHostEnv, vector_env

    if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
        raise ValueError(f"rollax.host.make: num_envs must be an integer >= 1, got {num_envs!r}.")
    if vectorization not in VECTORIZATIONS:
        raise ValueError(
            f"rollax.host.make: vectorization must be one of {VECTORIZATIONS}, got "
            f"{vectorization!r}."
        )
    if isinstance(env, str) and env.startswith(NATIVE):
        return _native(env, num_envs, vectorization, options)
    if isinstance(env, gymnasium.vector.VectorEnv):
        if options:
            raise TypeError(f"rollax.host.make: a VectorEnv takes no options, got {options}.")
        if type(env).__module__.startswith("ale_py"):  # ALE's seeds are one int
            from rollax.host._native import AleHostEnv

            return AleHostEnv(_sized(env, num_envs, type(env).__name__), type(env).__name__)
        return GymnasiumHostEnv(_sized(env, num_envs, type(env).__name__))
    name, factory = _factory(env, options)
    first = factory()
    if isinstance(first, gymnasium.vector.VectorEnv):
        return GymnasiumHostEnv(_sized(first, num_envs, name), name)
    if not isinstance(first, gymnasium.Env):
        raise TypeError(
            f"rollax.host.make({name!r}): it returned {type(first).__name__}; a host "
            "environment is a gymnasium.Env or a gymnasium.vector.VectorEnv."
        )
    first.close()
    return GymnasiumHostEnv(vector_env(factory, num_envs, name, vectorization), name)


NATIVE = ("ale/", "envpool/")
"""Id prefixes of the host libraries that step a batch in threads of their own."""


def _native(env: str, num_envs: int, vectorization: str, options: dict[str, Any]) -> HostEnv:
    """ALE's ``"ale/<Game>-v5"`` or envpool's ``"envpool/<Task>"`` (:mod:`rollax.host._native`)."""
    library, package, extra = (
        ("ALE", "ale_py", "atari") if env.startswith("ale/") else ("envpool", "envpool", "envpool")
    )
    if vectorization != "sync":
        raise ValueError(
            f"rollax.host.make({env!r}): {library} steps its batch in threads of its own; leave "
            f"vectorization at 'sync' (got {vectorization!r}) and set its num_threads instead."
        )
    import importlib.util

    if importlib.util.find_spec(package) is None:
        raise ValueError(
            f"rollax.host.make({env!r}) needs {library}: pip install 'rollax[{extra}]'."
        )
    from rollax.host._native import AleHostEnv, EnvpoolHostEnv

    if env.startswith("ale/"):
        return AleHostEnv.make(env, num_envs, **options)
    return EnvpoolHostEnv(env.removeprefix("envpool/"), num_envs, **options)


def _sized(env: Any, num_envs: int, name: str) -> Any:
    if num_envs not in (1, env.num_envs):
        env.close()
        raise ValueError(
            f"rollax.host.make({name!r}): the vector environment has {env.num_envs} "
            f"environments, but num_envs={num_envs} was asked for."
        )
    return env


def _factory(env: Any, options: dict[str, Any]) -> tuple[str, Callable[[], Any]]:
    """What makes one environment (or a vector environment), and its name for messages."""
    if isinstance(env, str):
        if env.startswith("gymnasium/"):
            return env, _GymnasiumId(env.removeprefix("gymnasium/"), options)
        if ":" in env:
            from rollax.envs._registry import _import

            module, _, attribute = env.partition(":")
            found = getattr(_import(module, env), attribute, None)
            if not callable(found):
                raise ValueError(f"rollax.host.make({env!r}): {module!r} has no callable "
                                 f"{attribute!r}.")  # fmt: skip
            return env, _Call(found, options, env)
        raise ValueError(
            f"rollax.host.make({env!r}): a host environment is 'gymnasium/<id>', "
            "'package.module:Name', a function or a VectorEnv; rollax's own environments "
            "are made by rollax.make."
        )
    if callable(env):
        name = getattr(env, "__qualname__", type(env).__name__)
        return f"{getattr(env, '__module__', '')}:{name}", _Call(env, options, name)
    raise TypeError(
        f"rollax.host.make: env must be 'gymnasium/<id>', 'package.module:Name', a function "
        f"returning a gymnasium.Env, or a gymnasium.vector.VectorEnv; got {type(env).__name__}."
    )


class _GymnasiumId:
    """``gymnasium.make(id, **options)``, picklable for worker processes."""

    def __init__(self, env_id: str, options: dict[str, Any]) -> None:
        import gymnasium

        if env_id not in gymnasium.registry:
            import difflib

            close = difflib.get_close_matches(env_id, list(gymnasium.registry), n=3)
            hint = f" Close: {', '.join(close)}." if close else ""
            raise ValueError(f"rollax.host.make: gymnasium has no environment {env_id!r}.{hint}")
        self.env_id, self.options = env_id, options

    def __call__(self) -> Any:
        import gymnasium

        return gymnasium.make(self.env_id, **self.options)


class _Call:
    """``function(**options)``, with a ``TypeError`` naming an option it does not take."""

    def __init__(self, function: Callable[..., Any], options: dict[str, Any], name: str) -> None:
        try:
            inspect.signature(function).bind(**options)
        except TypeError as err:
            raise TypeError(f"rollax.host.make({name!r}): {err}.") from None
        except ValueError:  # no signature to check (a builtin): the call decides
            pass
        self.function, self.options = function, options

    def __call__(self) -> Any:
        return self.function(**self.options)
