"""Checks of configuration fields, with messages that name the field, value and what is valid.

Every agent's ``Config.validate`` is made of these, so the same mistake reads the same way
whichever agent it is made in (``PPOConfig.num_envs must be a positive integer, got 0.``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = [
    "check_activation",
    "check_fields",
    "check_replay",
    "check_widths",
]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_RULES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "positive_int": (lambda v: _is_int(v) and v >= 1, "must be a positive integer"),
    "non_negative_int": (lambda v: _is_int(v) and v >= 0, "must be an integer >= 0"),
    "positive": (lambda v: v > 0, "must be positive"),
    "non_negative": (lambda v: v >= 0, "must be >= 0"),
    "unit_interval": (lambda v: 0 <= v <= 1, "must lie in [0, 1]"),
    "positive_fraction": (lambda v: 0 < v <= 1, "must lie in (0, 1]"),
}


def check_fields(config: Any, rule: str, *names: str) -> None:
    """Raise a ``ValueError`` for the first field among ``names`` that breaks ``rule``.

    Args:
        config: A configuration dataclass.
        rule: ``"positive_int"``, ``"non_negative_int"``, ``"positive"``,
            ``"non_negative"``, ``"unit_interval"`` or ``"positive_fraction"`` (``(0, 1]``).
        *names: Its fields to check.
    """
    test, requirement = _RULES[rule]
    for name in names:
        value = getattr(config, name)
        try:
            ok = bool(test(value))
        except TypeError:
            ok = False
        if not ok:
            raise ValueError(f"{type(config).__name__}.{name} {requirement}, got {value!r}.")


def check_activation(config: Any, name: str = "activation") -> None:
    """Raise a ``ValueError`` unless the field names one of the networks' activations."""
    from rollax.networks import ACTIVATIONS

    value = getattr(config, name)
    if value not in ACTIVATIONS:
        raise ValueError(
            f"{type(config).__name__}.{name} must be one of {sorted(ACTIVATIONS)}, got {value!r}."
        )


def check_widths(config: Any, name: str = "hidden_sizes", allow_empty: bool = False) -> None:
    """Raise a ``ValueError`` unless the field is a tuple of positive integers.

    It must not be empty unless ``allow_empty`` (no hidden layer: the heads read their input
    directly).
    """
    value = getattr(config, name)
    if (not value and not allow_empty) or any(not _is_int(h) or h < 1 for h in value):
        some = "" if allow_empty else " (at least one)"
        raise ValueError(
            f"{type(config).__name__}.{name} must be positive integers{some}, got {value!r}."
        )


def check_replay(config: Any) -> None:
    """Raise a ``ValueError`` unless the replay sizes of an off-policy config fit together."""
    name = type(config).__name__
    if config.buffer_size % config.num_envs:
        below = config.buffer_size // config.num_envs * config.num_envs
        raise ValueError(
            f"{name}.buffer_size={config.buffer_size} must be a multiple of "
            f"num_envs={config.num_envs} (each environment fills its share); use "
            f"{below or config.num_envs} or {below + config.num_envs}."
        )
    if config.buffer_size // config.num_envs < 2 * config.replay_length:
        raise ValueError(
            f"{name}.buffer_size={config.buffer_size} keeps "
            f"{config.buffer_size // config.num_envs} steps per environment, too few for "
            f"windows of replay_length={config.replay_length} steps; use buffer_size >= "
            f"{2 * config.replay_length * config.num_envs}."
        )
    length = config.replay_length
    if max(config.learning_starts, config.steps_per_iteration) < length * config.num_envs:
        raise ValueError(
            f"{name}.learning_starts={config.learning_starts} would sample windows of "
            f"{length} steps (replay_length) from a buffer holding fewer per environment; "
            f"use learning_starts >= replay_length * num_envs = {length * config.num_envs}."
        )
    if config.learning_starts > config.buffer_size:
        raise ValueError(
            f"{name}.learning_starts={config.learning_starts} exceeds buffer_size="
            f"{config.buffer_size}: learning starts once that many transitions are stored; "
            f"use learning_starts <= {config.buffer_size}."
        )
    if config.batch_size > config.buffer_size:
        raise ValueError(
            f"{name}.batch_size={config.batch_size} exceeds buffer_size="
            f"{config.buffer_size}; use batch_size <= {config.buffer_size}."
        )
