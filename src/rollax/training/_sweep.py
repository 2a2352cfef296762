"""Sweeps: a grid of hyperparameter values, times the seeds, trained as one program.

A configuration's ``sweep`` holds entries ``NAME=V1,V2,...``. Their grid is every
combination of the values (the first entry varies slowest), and every grid point trains
``num_seeds`` seeds: ``points * num_seeds`` *members* on the state's seed axis, member ``m``
being seed ``m % num_seeds`` of point ``m // num_seeds``. A member starts from the same keys
as that seed of a run without a sweep, so the seeds of different points share their
environments and initial parameters, and each member trains as the point's configuration
would alone.

Only fields the agent holds as data in its training state (its per-seed hyperparameters,
the config class's ``SWEEPABLE``) can vary between members: the others set shapes, loop
lengths or which code is compiled, which every member of one program shares.
"""

from __future__ import annotations

import ast
import dataclasses
import itertools
import typing
from typing import Any

from rollax.training._config import ConfigError, decode_value

__all__ = [
    "member_configs",
    "num_members",
    "point_labels",
    "sweep_entries",
]


def sweep_entries(sweep: Any, where: str = "sweep") -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``("lr=1e-3,3e-3", "ent_coef=0")`` as ``(("lr", ("1e-3", "3e-3")), ("ent_coef", ("0",)))``.

    The values stay as written (labels and column names use them).

    Raises:
        ValueError: an entry that is not ``NAME=V1,V2,...``, an empty value, or a name given
            twice.
    """
    if isinstance(sweep, str) or not all(isinstance(e, str) for e in sweep):
        raise ValueError(f"{where} must be NAME=V1,V2,... strings, got {sweep!r}.")
    entries: list[tuple[str, tuple[str, ...]]] = []
    for entry in sweep:
        name, eq, text = entry.partition("=")
        name = name.strip()
        values = tuple(v.strip() for v in text.split(","))
        if not eq or not name.isidentifier() or not all(values):
            raise ValueError(
                f"{where}: {entry!r} is not NAME=V1,V2,... (e.g. learning_rate=1e-3,3e-3)."
            )
        if name in dict(entries):
            raise ValueError(f"{where}: {name!r} is swept twice; give its values in one entry.")
        if len(set(values)) < len(values):
            raise ValueError(f"{where}: {entry!r} repeats a value; give each value once.")
        entries.append((name, values))
    return tuple(entries)


def point_labels(sweep: Any, sep: str = " ") -> list[str]:
    """Each grid point as ``"lr=1e-3 ent_coef=0"`` (values as written); ``[]`` without a sweep."""
    entries = sweep_entries(sweep)
    if not entries:
        return []
    names = [name for name, _ in entries]
    return [
        sep.join(f"{n}={v}" for n, v in zip(names, values, strict=True))
        for values in itertools.product(*(values for _, values in entries))
    ]


def num_members(config: Any) -> int:
    """Members on the state's seed axis: ``num_seeds`` times the grid's points (1 without)."""
    return max(1, len(point_labels(config.sweep))) * int(config.num_seeds)


def _decode(config: Any, name: str, text: str, where: str) -> Any:
    """The value ``text`` as the type of ``config``'s field ``name``."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        value = {"true": True, "false": False}.get(text.lower(), text)
    kind = typing.get_type_hints(type(config))[name]
    try:
        return decode_value(kind, value, where)
    except ConfigError as e:
        raise ValueError(str(e)) from None


def _points(config: Any) -> list[dict[str, Any]]:
    """The grid's points as field values, checked against the config class."""
    cls = type(config)
    name_of = cls.__name__
    entries = sweep_entries(config.sweep, f"{name_of}.sweep")
    fields = {f.name for f in dataclasses.fields(config)}
    sweepable = tuple(getattr(cls, "SWEEPABLE", ()))
    decoded = []
    for name, values in entries:
        if name not in fields:
            raise ValueError(
                f"{name_of}.sweep: {name!r} is not a field of {name_of}; fields it can sweep: "
                f"{', '.join(sweepable) or 'none'}."
            )
        if name not in sweepable:
            raise ValueError(
                f"{name_of}.sweep: {name!r} cannot be swept in one program: it "
                f"{_why_static(cls, name)}, which every member of one program shares (only "
                f"values held per seed in the training state can differ); train its values "
                f"as separate runs. Fields {name_of} can sweep: {', '.join(sweepable)}."
            )
        where = f"{name_of}.sweep {name}"
        decoded.append([(name, _decode(config, name, v, where)) for v in values])
    return [dict(point) for point in itertools.product(*decoded)] if decoded else [{}]


def _why_static(cls: type, name: str) -> str:
    """Why field ``name`` of ``cls`` cannot differ between members, from its type."""
    kind = typing.get_type_hints(cls)[name]
    if kind is float:
        return "is compiled into the program as a constant"
    if kind is bool or typing.get_origin(kind) is typing.Literal or kind is str:
        return "chooses which code is compiled"
    return "sets array shapes or loop lengths"


def member_configs(config: Any) -> list[Any]:
    """Every member's configuration, in seed-axis order (``sweep=()`` in each).

    Each is ``config`` with its point's values, checked with its own ``validate()``.

    Raises:
        ValueError: a malformed entry, a field that cannot be swept, a value of the wrong
            type, or a point whose configuration is invalid (the point is named).
    """
    members = []
    for point in _points(config):
        member = config.replace(sweep=(), **point)
        if point:
            try:
                member.validate()
            except ValueError as e:
                said = " ".join(f"{k}={v!r}" for k, v in point.items())
                raise ValueError(f"{type(config).__name__}.sweep point {said}: {e}") from None
        members += [member] * int(config.num_seeds)
    return members
