"""The optimizer every agent names, built with optax, and the one gradient step of the layer.

An agent's configuration inherits :class:`OptimizerConfig`: which optax optimizer it uses
(one of six shorthands, or any optax ``GradientTransformation`` factory: an import path such
as ``"optax:adabelief"``, or in Python the function itself) and how its learning rate
changes over the budget. The values that may differ per seed
(learning rate, schedule, warmup, weight decay, momentum, norm bound) are data, in the
agent's hyperparameters (:class:`OptimizerHyperParams`, which each agent's hyperparameters
extend): the transformation is built inside the traced step from them
(:meth:`Optimizer.transformation`), so sweeping or evolving them never recompiles. Only the
optimizer's kind is static, since it decides the optimizer state's structure.

For a shorthand, the optimizer state holds what the stateful part of the optimizer keeps
(Adam's moments, RMSProp's mean square, a momentum trace) and nothing else: the clipping
before it and the weight decay and learning rate after it are stateless. So Adam's state is
an ``optax.ScaleByAdamState``, as in rollax 0.1. A factory's state is all of what it returns
keeps, every wrapper's included (``optax.chain``, ``optax.MultiSteps``): checkpoints hold it
whole. The factory is called inside the traced step with the seed's values as float32
arrays, as ``optax.inject_hyperparams`` would hold them: ``learning_rate`` (as scheduled),
and ``weight_decay`` and ``momentum`` where its signature takes them.

:class:`GradientStep` is the layer's part: the mean of the gradients over the seed's data
shards, then the agent's transformation.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from collections.abc import Callable
from typing import Any, Literal

import jax
import jax.numpy as jnp
import optax

from rollax._struct import pytree_dataclass
from rollax.training._config import ConfigError
from rollax.training._validate import check_fields

__all__ = [
    "OPTIMIZER_DATA",
    "OPTIMIZERS",
    "SCHEDULES",
    "GradientStep",
    "Optimizer",
    "OptimizerConfig",
    "OptimizerHyperParams",
    "optimizer_factory",
    "polyak",
    "schedule_multiplier",
    "stretch_schedule",
]

OptimizerName = Literal["adam", "adamw", "rmsprop", "radam", "lion", "sgd"]
OPTIMIZERS: tuple[str, ...] = ("adam", "adamw", "rmsprop", "radam", "lion", "sgd")
"""The optimizers an agent's configuration names by shorthand (any other is a factory)."""
_FACTORY_VALUES = ("weight_decay", "momentum")
"""The optimizer values a factory is given where its signature takes them (beside
``learning_rate``, which every factory takes)."""
ScheduleName = Literal["constant", "linear", "cosine", "warmup_cosine"]
SCHEDULES: tuple[str, ...] = ("constant", "linear", "cosine", "warmup_cosine")
"""The learning-rate schedules, in the order of their codes in :class:`OptimizerHyperParams`."""
_DECAYED = ("adamw", "lion")  # decoupled weight decay
_MOMENTUM = ("sgd", "rmsprop")
OPTIMIZER_DATA: tuple[str, ...] = (
    "learning_rate", "lr_schedule", "warmup_fraction", "weight_decay", "momentum",
    "max_grad_norm",
)  # fmt: skip
"""The :class:`OptimizerConfig` fields held as per-seed data, which every agent's
``SWEEPABLE`` lists."""


@dataclasses.dataclass(frozen=True)
class OptimizerConfig:
    """The optimizer's fields, which every agent's configuration inherits.

    ``optimizer`` is static (it decides the optimizer state); the others are only defaults
    of per-seed data, which sweeps and population-based training may set per member.
    """

    learning_rate: float = 1e-3
    """The learning rate (at the start of lr_schedule; its peak after a warmup)."""
    optimizer: OptimizerName | str = "adam"
    """The optax optimizer of every gradient step: adam, adamw (Adam with decoupled weight
    decay), rmsprop (momentum, if any, applied after the scaling, as PyTorch's), radam, lion
    or sgd (with momentum), their constants optax's defaults (RMSProp's decay 0.9, with eps
    inside the square root); or any optax GradientTransformation factory by import path,
    MODULE:NAME (optax:adabelief, or a function of your own returning an optax.chain or an
    optax.MultiSteps), called with learning_rate (and weight_decay, momentum where it takes
    them) as per-seed data. In Python, the factory itself may be given."""
    lr_schedule: ScheduleName = "constant"
    """How the learning rate changes over total_steps: constant; linear (to zero); cosine (to
    zero); warmup_cosine (from zero linearly over warmup_fraction, then cosine to zero).
    Resuming to a new budget stretches it."""
    warmup_fraction: float = 0.0
    """warmup_cosine: the fraction of total_steps over which the learning rate rises from
    zero, in [0, 1)."""
    weight_decay: float = 0.0
    """adamw and lion: decoupled weight decay, scaled by the learning rate (optax's)."""
    momentum: float = 0.0
    """sgd and rmsprop: the momentum (decay of the update trace), in [0, 1)."""
    max_grad_norm: float = 0.0
    """Gradients are rescaled to at most this global norm (0: off)."""

    @classmethod
    def refuse_older_versions(cls, data: dict[str, Any], where: str) -> None:
        """Refuse a configuration stored before agents named their optimizer (rollax 0.1.0).

        Its run's checkpoints hold the hyperparameters in another layout (no optimizer
        values; PPO's ``anneal_updates``), which this version does not restore.

        Raises:
            ConfigError: ``data`` has no ``optimizer`` field.
        """
        if "optimizer" not in data:
            raise ConfigError(
                f"{where} has no optimizer field: it was written by rollax 0.1.0, before agents "
                "named their optimizer"
                + (" (it has anneal_lr)" if "anneal_lr" in data else "")
                + ": its checkpoints hold the hyperparameters in a layout this version does "
                "not restore. Resume or evaluate it with rollax 0.1.0, or train it again."
            )

    def unused_data(self) -> dict[str, str]:
        """The optimizer values that this configuration's compiled step ignores, and why.

        A member's value of one of these changes nothing (no bound is compiled when every
        member's ``max_grad_norm`` is 0; weight decay, momentum and warmup apply to some
        optimizers and schedules only), so population-based training refuses to evolve them.
        """
        members = self.member_configs() if hasattr(self, "member_configs") else [self]
        unused = {}
        if not any(m.max_grad_norm > 0 for m in members):
            unused["max_grad_norm"] = (
                "every member starts at 0, so no bound is compiled in; start one above 0"
            )
        for field, kinds in (("weight_decay", _DECAYED), ("momentum", _MOMENTUM)):
            if not _takes(self.optimizer, field, kinds):
                unused[field] = (
                    f"optimizer={_name(self.optimizer)!r} has none ({' and '.join(kinds)} do, "
                    f"and factories that take {field})"
                )
        if not any(m.lr_schedule == "warmup_cosine" for m in members):
            unused["warmup_fraction"] = "no member's lr_schedule is warmup_cosine"
        return unused

    def validate_optimizer(self) -> None:
        """Raise a ``ValueError`` naming the first optimizer field that does not fit."""
        name = type(self).__name__
        optimizer_factory(self.optimizer, f"{name}.optimizer")
        if self.lr_schedule not in SCHEDULES:
            raise ValueError(
                f"{name}.lr_schedule must be one of {list(SCHEDULES)}, got {self.lr_schedule!r}."
            )
        check_fields(self, "positive", "learning_rate")
        check_fields(
            self, "non_negative", "weight_decay", "warmup_fraction", "momentum", "max_grad_norm"
        )
        if self.warmup_fraction >= 1 or self.momentum >= 1:
            field = "warmup_fraction" if self.warmup_fraction >= 1 else "momentum"
            raise ValueError(f"{name}.{field} must be below 1, got {getattr(self, field)!r}.")
        if self.weight_decay and not _takes(self.optimizer, "weight_decay", _DECAYED):
            raise ValueError(
                f"{name}.weight_decay={self.weight_decay!r} applies to the optimizers "
                f"{list(_DECAYED)} and to factories that take weight_decay, not "
                f"optimizer={_name(self.optimizer)!r} (set weight_decay=0, or "
                "optimizer='adamw')."
            )
        if self.momentum and not _takes(self.optimizer, "momentum", _MOMENTUM):
            raise ValueError(
                f"{name}.momentum={self.momentum!r} applies to the optimizers "
                f"{list(_MOMENTUM)} and to factories that take momentum, not "
                f"optimizer={_name(self.optimizer)!r} (set momentum=0)."
            )
        if self.warmup_fraction and self.lr_schedule != "warmup_cosine":
            raise ValueError(
                f"{name}.warmup_fraction={self.warmup_fraction!r} applies to "
                f"lr_schedule='warmup_cosine', not {self.lr_schedule!r}."
            )


def optimizer_factory(optimizer: Any, where: str = "optimizer") -> Callable[..., Any] | None:
    """The optax factory ``optimizer`` names: ``None`` for a shorthand (:data:`OPTIMIZERS`).

    Args:
        optimizer: A shorthand, an import path ``"MODULE:NAME"`` of a factory, or a factory.
        where: The field, for messages.

    Raises:
        ValueError: neither, or a path that does not import, naming what is valid.
    """
    if isinstance(optimizer, str) and optimizer in OPTIMIZERS:
        return None
    if callable(optimizer):
        factory = optimizer
    elif isinstance(optimizer, str) and ":" in optimizer:
        module, _, attribute = optimizer.partition(":")
        try:
            factory = getattr(importlib.import_module(module), attribute)
        except (ImportError, AttributeError) as e:
            raise ValueError(f"{where}={optimizer!r} does not import ({e}).") from None
    else:
        raise ValueError(
            f"{where} must be one of {list(OPTIMIZERS)} or an optax GradientTransformation "
            f"factory (MODULE:NAME, e.g. 'optax:adabelief'), got {optimizer!r}."
        )
    try:
        parameters = inspect.signature(factory).parameters
    except (TypeError, ValueError):  # no signature to read: it must take learning_rate
        return factory
    if "learning_rate" not in parameters and not any(
        p.kind is p.VAR_KEYWORD for p in parameters.values()
    ):
        raise ValueError(
            f"{where}={_name(optimizer)!r} takes no learning_rate: a factory is called with "
            "learning_rate=... (the seed's, as scheduled); wrap it, e.g. lambda "
            "learning_rate: optax.chain(..., optax.adabelief(learning_rate))."
        )
    return factory


def _name(optimizer: Any) -> str:
    """How messages name an optimizer (a factory by its qualified name)."""
    if callable(optimizer):
        return f"{getattr(optimizer, '__module__', '?')}:{getattr(optimizer, '__qualname__', '?')}"
    return str(optimizer)


def _takes(optimizer: Any, value: str, kinds: tuple[str, ...]) -> bool:
    """Whether ``optimizer`` uses ``value`` (a shorthand of ``kinds``, or a factory taking it)."""
    try:
        factory = optimizer_factory(optimizer)
    except ValueError:
        return False
    if factory is None:
        return optimizer in kinds
    return value in _factory_values(factory)


def _factory_values(factory: Callable[..., Any]) -> tuple[str, ...]:
    """Which of :data:`_FACTORY_VALUES` ``factory``'s signature takes by name."""
    try:
        parameters = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return ()
    return tuple(v for v in _FACTORY_VALUES if v in parameters)


@pytree_dataclass
class OptimizerHyperParams:
    """The optimizer's values as data, one per seed; each agent's hyperparameters extend it.

    Attributes:
        learning_rate: The learning rate at the start of the schedule (its peak after a
            warmup).
        lr_schedule: The schedule's index in :data:`SCHEDULES` (as float32, as every
            hyperparameter is held).
        schedule_steps: Optimizer steps over which the schedule runs: the budget's, for every
            schedule (a constant one ignores it). 0 (a budget that ends before learning
            starts): constant, until a resume to a longer budget stretches it.
        warmup_fraction: warmup_cosine's warmup, a fraction of ``schedule_steps``.
        weight_decay: Decoupled weight decay (adamw, lion).
        momentum: Momentum (sgd, rmsprop).
        max_grad_norm: The gradient is rescaled to at most this global norm (0: unbounded).
    """

    learning_rate: jax.Array
    lr_schedule: jax.Array
    schedule_steps: jax.Array
    warmup_fraction: jax.Array
    weight_decay: jax.Array
    momentum: jax.Array
    max_grad_norm: jax.Array

    @classmethod
    def of(cls, config: Any, schedule_steps: int) -> Any:
        """This class's hyperparameters for ``config``, as Python numbers.

        The optimizer's values with a schedule over ``schedule_steps`` optimizer steps
        (:func:`optimizer_values`), and ``config``'s fields of the subclass's other names.
        """
        values = optimizer_values(config, schedule_steps)
        own = [f.name for f in dataclasses.fields(cls) if f.name not in values]
        return cls(**values, **{name: getattr(config, name) for name in own})


def optimizer_values(config: OptimizerConfig, schedule_steps: int) -> dict[str, Any]:
    """The :class:`OptimizerHyperParams` fields for ``config``, as Python numbers.

    Its schedule spans ``schedule_steps`` optimizer steps. Pass them to an agent's
    hyperparameters.
    """
    return {
        "learning_rate": config.learning_rate,
        "lr_schedule": SCHEDULES.index(config.lr_schedule),
        "schedule_steps": schedule_steps,
        "warmup_fraction": config.warmup_fraction,
        "weight_decay": config.weight_decay,
        "momentum": config.momentum,
        "max_grad_norm": config.max_grad_norm,
    }


def stretch_schedule(hp: OptimizerHyperParams, schedule_steps: int) -> OptimizerHyperParams:
    """``hp`` with its schedule spanning ``schedule_steps`` optimizer steps, for a new budget.

    Every member's is stretched (a constant learning rate ignores it).
    """
    return hp.replace(schedule_steps=jnp.full_like(hp.schedule_steps, schedule_steps))


def schedule_multiplier(hp: OptimizerHyperParams, step: jax.Array) -> jax.Array:
    """The learning rate's factor after ``step`` optimizer steps: float32 ``()``.

    optax's own schedules, applied to the budget: each runs over a unit span and is read at
    the progress ``p = step / schedule_steps``, so that the span (and a warmup's fraction)
    stays data that a resume stretches and a sweep varies. constant: 1; linear:
    ``optax.linear_schedule`` from 1 to 0; cosine: ``optax.cosine_decay_schedule``;
    warmup_cosine: a linear warmup over the warmup fraction ``w``, then the cosine decay over
    the rest (``optax.warmup_cosine_decay_schedule``'s shape). ``schedule_steps = 0``: 1.
    """
    span = hp.schedule_steps
    progress = step.astype(jnp.float32) / jnp.where(span > 0, span, 1.0)
    p = jnp.clip(progress, 0.0, 1.0)
    w = hp.warmup_fraction
    warmup = p / jnp.maximum(w, 1e-12)
    decay = _UNIT_COSINE((p - w) / jnp.maximum(1.0 - w, 1e-12))
    code = hp.lr_schedule
    factor = jnp.select(
        [code == SCHEDULES.index("linear"), code == SCHEDULES.index("cosine"),
         code == SCHEDULES.index("warmup_cosine")],
        [_UNIT_LINEAR(progress), _UNIT_COSINE(progress), jnp.where(p < w, warmup, decay)],
        1.0,
    )  # fmt: skip
    return jnp.where(span > 0, factor, 1.0)


_UNIT_LINEAR = optax.linear_schedule(1.0, 0.0, transition_steps=1)
_UNIT_COSINE = optax.cosine_decay_schedule(1.0, decay_steps=1)


def _around(
    before: list[optax.GradientTransformation],
    core: optax.GradientTransformation,
    after: list[optax.GradientTransformation],
) -> optax.GradientTransformation:
    """``before``, ``core`` and ``after`` chained, with ``core``'s state as the whole state.

    The others are stateless: their ``EmptyState`` would only change the state's tree.
    ``core`` is anything with optax's ``init`` and ``update`` (a ``GradientTransformation``,
    an ``optax.MultiSteps``).
    """
    empty = optax.EmptyState()

    def update(updates: Any, state: Any, params: Any = None) -> tuple[Any, Any]:
        # optax mixes int32 step counts with float32 (not strict-promotion clean).
        with jax.numpy_dtype_promotion("standard"):
            for tx in before:
                updates, _ = tx.update(updates, empty, params)
            updates, state = core.update(updates, state, params)
            for tx in after:
                updates, _ = tx.update(updates, empty, params)
        return updates, state

    return optax.GradientTransformation(core.init, update)


@dataclasses.dataclass(frozen=True)
class Optimizer:
    """An agent's optimizer: its static parts; the values come with each step.

    Attributes:
        kind: One of :data:`OPTIMIZERS`, or the factory's name.
        eps: The epsilon of Adam, AdamW, RAdam and RMSProp (a factory keeps its own).
        clip_value: Each gradient element is clipped to ``[-clip_value, clip_value]`` first
            (``optax.clip``; 0: off).
        bounded: Whether the step bounds the gradient's norm at all (some member starts with
            ``max_grad_norm > 0``); members at 0 are then unbounded.
        scheduled: Whether the step schedules the learning rate at all (some member's
            ``lr_schedule`` is not constant).
        factory: The optax factory of a configuration that names one (``None`` for a
            shorthand).

    Leaving out what no member uses keeps the compiled step as it was before optimizers
    became a choice, to the bit.
    """

    kind: str = "adam"
    eps: float = 1e-8
    clip_value: float = 0.0
    bounded: bool = True
    scheduled: bool = True
    factory: Callable[..., Any] | None = None

    @classmethod
    def of(cls, config: OptimizerConfig, **static: Any) -> Optimizer:
        """The optimizer ``config`` names, for every member of its sweep.

        ``static`` holds the agent's own static choices (``eps``, ``clip_value``).
        """
        members = config.member_configs() if hasattr(config, "member_configs") else [config]
        return cls(
            kind=_name(config.optimizer),
            bounded=any(m.max_grad_norm > 0 for m in members),
            scheduled=any(m.lr_schedule != "constant" for m in members),
            factory=optimizer_factory(config.optimizer),
            **static,
        )

    def _core(self, momentum: jax.Array) -> optax.GradientTransformation:
        """The stateful part of the optimizer.

        Built from float32 arrays (as ``optax.inject_hyperparams`` would hold them), whose
        values never change its state's structure.
        """
        b1, b2, eps, eps_root = (jnp.float32(x) for x in (0.9, 0.999, self.eps, 0.0))
        if self.kind in ("adam", "adamw"):
            return optax.scale_by_adam(b1=b1, b2=b2, eps=eps, eps_root=eps_root)
        if self.kind == "radam":
            return optax.scale_by_radam(b1=b1, b2=b2, eps=eps, eps_root=eps_root)
        if self.kind == "lion":
            return optax.scale_by_lion(b1=b1, b2=jnp.float32(0.99))
        trace = optax.trace(decay=momentum)
        if self.kind == "rmsprop":
            return optax.chain(optax.scale_by_rms(decay=jnp.float32(0.9), eps=eps), trace)
        return trace  # sgd

    def _built(self, learning_rate: jax.Array, values: dict[str, jax.Array]) -> Any:
        """The factory's transformation for these values (float32 arrays)."""
        assert self.factory is not None
        kwargs = {k: values[k] for k in _factory_values(self.factory)}
        with jax.numpy_dtype_promotion("standard"):  # optax mixes int32 counts and floats
            return self.factory(learning_rate=learning_rate, **kwargs)

    def init(self, params: Any) -> Any:
        """The optimizer state for ``params``."""
        if self.factory is not None:  # the values do not change the state's structure
            zero = jnp.float32(0.0)
            built = self._built(zero, dict.fromkeys(_FACTORY_VALUES, zero))
            with jax.numpy_dtype_promotion("standard"):
                return built.init(params)
        return self._core(jnp.float32(0.0)).init(params)

    def transformation(
        self, hp: OptimizerHyperParams, step: jax.Array, decay: bool = True
    ) -> optax.GradientTransformation:
        """The optax transformation of one step, from one seed's values ``hp``.

        Clipping, the optimizer, weight decay (unless ``decay`` is False: parameters that are
        not weights, such as SAC's temperature), and the learning rate as scheduled after
        ``step`` optimizer steps.
        """
        before = []
        if self.clip_value:
            before.append(optax.clip(self.clip_value))
        if self.bounded:  # a member at 0 is unbounded: an infinite bound leaves it as it is
            bound = jnp.where(hp.max_grad_norm > 0, hp.max_grad_norm, jnp.inf)
            before.append(optax.clip_by_global_norm(bound))
        learning_rate = hp.learning_rate
        if self.scheduled:
            learning_rate = learning_rate * schedule_multiplier(hp, step)
        if self.factory is not None:
            values = {"momentum": hp.momentum, "weight_decay": hp.weight_decay}
            if not decay:
                values["weight_decay"] = jnp.zeros_like(hp.weight_decay)
            return _around(before, self._built(learning_rate, values), [])
        after = []
        if decay and self.kind in _DECAYED:
            after.append(optax.add_decayed_weights(hp.weight_decay))
        after.append(optax.scale_by_learning_rate(learning_rate))
        return _around(before, self._core(hp.momentum), after)


def _identity(tree: Any) -> Any:
    return tree


@dataclasses.dataclass(frozen=True)
class GradientStep:
    """The layer's gradient step: the mean over the seed's shards, then the agent's optax.

    An agent is handed it by the layer (:func:`rollax.training.gradient_step_for`): it is
    all an agent knows of how its seed is split.

    Attributes:
        mean: The layout's mean over a seed's shards
            (:meth:`rollax.training.Layout.mean`): every shard then takes the same step,
            from the gradient of the seed's whole batch.
        num_shards: The seed's shards.
    """

    mean: Callable[[Any], Any] = _identity
    num_shards: int = 1

    @property
    def shard_mean(self) -> Callable[[Any], Any] | None:
        """``mean`` where a seed has several shards, else ``None``.

        What batch statistics (running observation statistics) average with.
        """
        return self.mean if self.num_shards > 1 else None

    def __call__(
        self, transformation: optax.GradientTransformation, params: Any, opt_state: Any, grads: Any
    ) -> tuple[Any, Any]:
        """One step: ``(params, opt_state)`` after applying this shard's ``grads``.

        The gradients are averaged over the seed's shards, then go through
        ``transformation``.
        """
        grads = self.mean(grads)
        updates, opt_state = transformation.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state


def polyak(target: Any, online: Any, tau: jax.Array) -> Any:
    """Target parameters moved ``tau`` of the way to ``online`` (``optax.incremental_update``)."""
    return optax.incremental_update(online, target, tau)
