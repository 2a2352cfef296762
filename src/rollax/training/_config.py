"""Configuration dataclasses to and from JSON, decoded by each field's declared type.

A run directory stores its configurations in ``config.json``; reading them back must give
the same frozen dataclasses, or say exactly what does not fit (a field this version does
not know, one it needs and the file lacks, a value of the wrong type) instead of a
traceback. Decoding follows the type annotations, so a new field of any supported type
(``int``, ``float``, ``bool``, ``str``, ``tuple[X, ...]``, ``X | None``, ``Literal[...]`` or
a nested config dataclass) needs no edit here.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import types
import typing
from collections.abc import Callable
from typing import Any, Literal, TypeVar

__all__ = [
    "ConfigError", "config_to_json", "decode_config", "decode_value", "with_defaults"
]  # fmt: skip

C = TypeVar("C")


class ConfigError(ValueError):
    """A stored configuration that does not fit this version's configuration class."""


def config_to_json(config: Any) -> dict[str, Any]:
    """A config dataclass as JSON-ready data (tuples become lists).

    A function held in a field (an optimizer factory) is written as its import path
    ``MODULE:NAME``, which reads back as the same function.

    Raises:
        ConfigError: a function that no import path reaches (a lambda, a function defined
            inside another), naming the field.
    """
    data = dataclasses.asdict(config)
    for name, value in data.items():
        if callable(value) and not isinstance(value, type):
            data[name] = import_path(value, f"{type(config).__name__}.{name}")
    return data


def import_path(fn: Callable[..., Any], where: str) -> str:
    """``fn``'s import path ``MODULE:NAME``, checked to import as ``fn`` itself.

    Raises:
        ConfigError: no import path reaches ``fn``, naming ``where``.
    """
    module, name = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
    try:
        found = getattr(importlib.import_module(module), name) if module else None
    except (ImportError, AttributeError):
        found = None
    if found is not fn:
        raise ConfigError(
            f"{where}={fn!r} cannot be written to a run's config.json: it has no import path "
            "(a lambda, or a function defined inside another). Define it at the top level of "
            "a module and give it, or its path 'MODULE:NAME'."
        )
    return f"{module}:{name}"


def decode_config(cls: type[C], data: Any, where: str) -> C:
    """Rebuild a config dataclass ``cls`` from JSON data, checking every field.

    Args:
        cls: A dataclass whose fields are annotated with supported types.
        data: The decoded JSON object.
        where: What ``data`` is, for messages (e.g. ``"config.json: 'ppo'"``).

    A class may define ``refuse_older_versions(data, where)``, which raises a
    :class:`ConfigError` for data an older rollax wrote in a layout this version cannot take.

    Raises:
        ConfigError: an unknown or missing field, or a value of the wrong type; the message
            names the field, what was found and what is valid.
    """
    if not isinstance(data, dict):
        raise ConfigError(f"{where} must be a JSON object of {cls.__name__} fields, got {data!r}")
    refuse_older = getattr(cls, "refuse_older_versions", None)
    if refuse_older is not None:  # a layout this version cannot take, named before the rest
        refuse_older(data, where)
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    hints = typing.get_type_hints(cls)
    unknown = sorted(set(data) - set(fields))
    missing = sorted(set(fields) - set(data))
    known = ", ".join(fields)
    if unknown:
        raise ConfigError(
            f"{where} has field(s) {', '.join(map(repr, unknown))} that {cls.__name__} of this "
            f"rollax version does not have (it was written by another version?); "
            f"{cls.__name__}'s fields are: {known}"
        )
    if missing:
        raise ConfigError(
            f"{where} lacks field(s) {', '.join(map(repr, missing))} of {cls.__name__} (it was "
            f"written by another version of rollax?); add them to the file with the value the "
            f"run used (defaults: "
            + ", ".join(f"{m}={_default(fields[m])!r}" for m in missing)
            + ")"
        )
    values = {
        name: decode_value(hints[name], data[name], f"{where} field {name!r}") for name in data
    }
    return cls(**values)


def _default(field: dataclasses.Field) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return "no default"


def decode_value(kind: Any, value: Any, where: str) -> Any:
    """``value`` as an instance of the annotated type ``kind``.

    Raises:
        ConfigError: a value that does not fit, naming ``where``, the value and the type.
    """
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for option in (a for a in args if a is not type(None)):
            try:
                return decode_value(option, value, where)
            except ConfigError as e:
                errors.append(str(e))
        if len(errors) == 1:
            raise ConfigError(errors[0])
        raise ConfigError(f"{where}: {value!r} fits none of {kind}")
    if origin is Literal:
        if value in args and type(value) in {type(a) for a in args}:
            return value
        raise ConfigError(f"{where} must be one of {list(args)}, got {value!r}")
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise ConfigError(f"{where} must be a list, got {value!r}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(decode_value(args[0], v, f"{where}[{i}]") for i, v in enumerate(value))
        if len(args) != len(value):
            raise ConfigError(f"{where} must have {len(args)} entries, got {value!r}")
        pairs = enumerate(zip(args, value, strict=True))
        return tuple(decode_value(a, v, f"{where}[{i}]") for i, (a, v) in pairs)
    if dataclasses.is_dataclass(kind):
        return decode_config(kind, value, where)
    if kind is bool:
        if isinstance(value, bool):
            return value
    elif kind is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif kind is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    elif kind is str:
        if isinstance(value, str):
            return value
    else:
        raise TypeError(f"{where}: decode_config does not support fields of type {kind!r}")
    raise ConfigError(f"{where} must be {_WHAT[kind]}, got {value!r}")


_WHAT = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}


def with_defaults(**defaults: Any) -> Callable[[type[C]], type[C]]:
    """Give inherited fields other defaults in a subclass, before ``dataclasses.dataclass``.

    The fields keep their place, type and docstring (the base class's); only the defaults
    change.
    """

    def apply(cls: type[C]) -> type[C]:
        # Each inherited field's type, resolved where the field is declared (a string
        # annotation would otherwise be looked up in the subclass's module).
        inherited = {
            name: kind
            for base in reversed(cls.__mro__[1:])
            if dataclasses.is_dataclass(base)
            for name, kind in typing.get_type_hints(base).items()
            if name in base.__dataclass_fields__
        }
        unknown = sorted(set(defaults) - set(inherited))
        if unknown:
            raise TypeError(f"with_defaults: {cls.__name__} inherits no field {unknown}.")
        own = dict(inspect.get_annotations(cls))
        cls.__annotations__ = {**{k: inherited[k] for k in defaults}, **own}
        for name, value in defaults.items():
            setattr(cls, name, value)
        return cls

    return apply
