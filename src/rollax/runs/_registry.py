"""The algorithm registry: what the CLI, ``load_run`` and config decoding dispatch on.

Each algorithm registers its name, configuration class, factory and presets once: the
built-in ones of :mod:`rollax.agents` are registered here on the registry's first use, an
algorithm of your own with :func:`register`. Neither the training layer nor the agents name
the registry.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
from collections.abc import Callable, Mapping
from typing import Any

from rollax.training import Agent

__all__ = ["Algorithm", "algorithm_for_config", "algorithms", "get_algorithm", "register"]


@dataclasses.dataclass(frozen=True)
class Algorithm:
    """A registered algorithm.

    Attributes:
        name: Its name on the command line and in ``config.json`` (``"ppo"``).
        title: What it is, in words (``"Proximal Policy Optimization"``).
        config_type: Its configuration: a frozen dataclass with a docstring per field,
            ``total_steps`` and ``num_seeds`` fields, ``validate()`` and ``replace()``.
        make: ``(config, env_id, **make_options) -> Agent`` (``make_options``: options of
            :func:`rollax.make`, the environment's constructor's among them).
        presets: Configurations by environment id, for environments where the defaults
            would not do.
    """

    name: str
    title: str
    config_type: type
    make: Callable[..., Agent]
    presets: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def config_for(self, env_id: str) -> Any:
        """The preset for ``env_id``, or the configuration's defaults."""
        return self.presets.get(env_id, self.config_type())


_ALGORITHMS: dict[str, Algorithm] = {}


def register(algorithm: Algorithm) -> Algorithm:
    """Add an algorithm to the registry (its name must be new)."""
    if algorithm.name in _ALGORITHMS and _ALGORITHMS[algorithm.name] is not algorithm:
        raise ValueError(f"An algorithm named {algorithm.name!r} is already registered.")
    _ALGORITHMS[algorithm.name] = algorithm
    return algorithm


@functools.cache
def _register_builtins() -> None:
    """Register the algorithms of :mod:`rollax.agents` (imported on first use, not before)."""
    from rollax.agents import dqn, ppo, pqn, sac, td3

    for name, title, package, config_type, make in (
        ("ppo", "Proximal Policy Optimization", ppo, ppo.PPOConfig, ppo.make_ppo),
        ("pqn", "Parallel Q-learning (Q(lambda), LayerNorm, no replay)", pqn, pqn.PQNConfig,
         pqn.make_pqn),
        ("dqn", "Deep Q-Network (double, dueling, n-step)", dqn, dqn.DQNConfig, dqn.make_dqn),
        ("sac", "Soft Actor-Critic (twin critics, automatic entropy tuning)", sac,
         sac.SACConfig, sac.make_sac),
        ("td3", "Twin Delayed DDPG (clipped double-Q, target smoothing, delayed actor)", td3,
         td3.TD3Config, td3.make_td3),
    ):  # fmt: skip
        register(Algorithm(name, title, config_type, make, presets=package.PRESETS))


def _load() -> dict[str, Algorithm]:
    _register_builtins()
    return _ALGORITHMS


def algorithms() -> tuple[str, ...]:
    """The registered algorithms' names, sorted."""
    return tuple(sorted(_load()))


def get_algorithm(name: str) -> Algorithm:
    """The algorithm registered as ``name``.

    Raises:
        ValueError: an unknown name, listing the known ones (and the closest match).
    """
    registry = _load()
    if name not in registry:
        close = difflib.get_close_matches(str(name), registry, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ValueError(
            f"Unknown algorithm {name!r}{hint} Registered: {', '.join(sorted(registry))}."
        )
    return registry[name]


def algorithm_for_config(config: Any) -> Algorithm:
    """The algorithm whose configuration class ``config`` is an instance of.

    Raises:
        TypeError: no registered algorithm takes this configuration.
    """
    for algorithm in _load().values():
        if type(config) is algorithm.config_type:
            return algorithm
    names = ", ".join(a.config_type.__name__ for a in _load().values())
    raise TypeError(
        f"config must be one of the algorithms' configurations ({names}), got "
        f"{type(config).__name__}."
    )
