"""The interface an environment implements: dynamics and observations of one instance.

An :class:`Environment` knows nothing of time limits, episode statistics, keys for resets,
autoreset or batching: :class:`rollax.VecEnv` adds all of those in one place, the same way
for every environment. To add an environment, subclass :class:`Environment` and
:class:`EnvParams`, then :func:`rollax.register` it.
"""

from __future__ import annotations

import abc
import dataclasses
from typing import Any, Generic, TypeVar

import jax
import numpy as np

from rollax._struct import pytree_dataclass
from rollax.spaces import Space

__all__ = ["EnvParams", "Environment"]

StateT = TypeVar("StateT")
ParamsT = TypeVar("ParamsT", bound="EnvParams")


@pytree_dataclass
class EnvParams:
    """Parameters of an environment, passed to ``reset`` and ``step`` as data.

    Every field is a leaf, so changing a value does not recompile a jitted function and a
    field can hold one value per environment (a leading ``(num_envs,)`` axis). Subclasses
    add their own fields, each with a numpy-scalar default of the dtype it keeps.

    Attributes:
        max_episode_steps: Episodes are truncated after this many steps; int32.
    """

    max_episode_steps: Any = np.int32(1000)

    def replace(self: ParamsT, **changes: Any) -> ParamsT:
        """A copy with some fields changed, each cast to the dtype of the value it replaces.

        Casting keeps the abstract signature of the params identical, so passing the copy to
        a jitted function that has seen the original does not compile it again.

        Raises:
            TypeError: if a name is not a field of this params class.
        """
        names = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(changes) - names)
        if unknown:
            raise TypeError(
                f"{type(self).__name__}.replace: unknown field(s) {unknown}; "
                f"valid fields are {sorted(names)}."
            )
        cast = {}
        for name, value in changes.items():
            dtype = getattr(getattr(self, name), "dtype", None)
            if dtype is not None and not isinstance(value, jax.core.Tracer):
                given = np.asarray(value)
                if not np.can_cast(given.dtype, dtype, casting="same_kind"):
                    raise TypeError(
                        f"{type(self).__name__}.replace: {name} holds {np.dtype(dtype)}, got "
                        f"{value!r} of dtype {given.dtype}; pass a value castable to "
                        f"{np.dtype(dtype)}."
                    )
                value = given.astype(dtype) if given.ndim else np.dtype(dtype).type(given)
            cast[name] = value
        return dataclasses.replace(self, **cast)


class Environment(abc.ABC, Generic[StateT, ParamsT]):
    """Dynamics and observations of a single environment instance, as pure functions.

    Implementations keep all mutable data in the state pytree they return. An environment
    whose transitions are random keeps its own key in that state (seeded from the key
    given to :meth:`reset_env`), so deterministic environments pay nothing for keys.
    """

    @property
    @abc.abstractmethod
    def default_params(self) -> ParamsT:
        """The parameters used when ``params`` is ``None``."""

    @property
    @abc.abstractmethod
    def observation_space(self) -> Space:
        """Space of one observation."""

    @property
    @abc.abstractmethod
    def action_space(self) -> Space:
        """Space of one action."""

    @abc.abstractmethod
    def reset_env(self, key: jax.Array, params: ParamsT) -> StateT:
        """Draw an initial state from the reset distribution using ``key``."""

    @abc.abstractmethod
    def step_env(
        self, state: StateT, action: jax.Array, params: ParamsT
    ) -> tuple[StateT, jax.Array, jax.Array]:
        """Advance one step.

        Returns:
            ``(next_state, reward, terminated)``: reward float32 ``()``, terminated bool
            ``()``. Time limits are not the environment's business.
        """

    @abc.abstractmethod
    def observe(self, state: StateT, params: ParamsT) -> Any:
        """The observation of ``state``.

        Kept apart from the step so that wrappers such as action repeat can advance the
        state without computing observations nobody sees.
        """

    @property
    def name(self) -> str:
        """A readable name, the class name by default."""
        return type(self).__name__

    costly_reset: bool = False
    """Whether a reset costs far more than a branch on an accelerator (a device-to-host round
    trip; the Environments page, "Reset strategies", has the figures): ten steps or more of a
    small environment (a procedurally generated maze), or a physics simulator's forward pass
    (MuJoCo Playground's tasks, whatever their step costs).

    Only the default reset strategy on accelerators reads it: there, a costly reset is
    worth batching (``pool``); a cheap one is computed for every environment each step
    (``every_step``).
    """

    reset_chunk: int | None = None
    """Compute a batched reset at most this many environments at a time (``None``: all at once).

    For an environment whose reset, batched with ``vmap``, costs more than linearly in the
    batch on some backend: the reset strategies then draw states in chunks of this size
    (``lax.map``), each chunk batched. Craftax's world generation on the CPU sets it.
    """
