"""The configuration fields every agent shares for how many seeds it trains, and where."""

from __future__ import annotations

import dataclasses
from typing import Annotated, ClassVar, Literal, Self

import tyro

from rollax.training._layout import mesh_shape, parse_device
from rollax.training._sweep import member_configs, num_members
from rollax.training._validate import check_fields

__all__ = ["ScaleConfig"]


@dataclasses.dataclass(frozen=True)
class ScaleConfig:
    """Seeds, sweeps, shards and devices: the base of every agent's configuration.

    None of these changes what one seed computes from its global batch, except
    ``num_shards``, which says how that batch is split (and is therefore the value results
    depend on, never the device count).

    The training state's seed axis holds ``num_members`` members: ``num_seeds`` seeds of
    each point of the ``sweep``'s grid (member ``m`` is seed ``m % num_seeds`` of point
    ``m // num_seeds``); without a sweep, the seeds.

    Attributes:
        SWEEPABLE: The fields a ``sweep`` may vary: those the agent holds as per-seed data
            in its training state (set by each agent's config class).
    """

    SWEEPABLE: ClassVar[tuple[str, ...]] = ()

    num_seeds: int = 1
    """Independent seeds trained at once in one compiled program (their environments,
    parameters and randomness are their own: adding a seed changes no other seed's run)."""
    num_shards: int | None = None
    """Logical shards of each seed's environments: each shard steps num_envs / num_shards
    environments and takes its share of the minibatches (PPO shuffles within a shard) or of
    the replay (off-policy agents: each shard samples batch_size / num_shards from its own
    buffer of buffer_size / num_shards), and the shards average their gradients. Devices on
    the data axis each take whole shards, so one device runs the same shards as four. None
    (the default): 1, or as many as the devices on the data axis where devices outnumber
    what the seeds take (2 devices for 1 seed: 2 shards); the agent's config records the
    count, and a run keeps it on any devices."""
    sweep: Annotated[tuple[str, ...], tyro.conf.UseAppendAction] = ()
    """NAME=V1,V2,...: train every combination of these values, each with
    num_seeds seeds, in one compiled program, e.g. --sweep learning_rate=1e-3,3e-3 --sweep
    ent_coef=0,0.01. Only hyperparameters held as data in the training state can be swept;
    metrics.csv, TensorBoard and rollax plot report each grid point."""
    devices: int | Literal["all", "auto"] = 1
    """Devices to train on: a count, 'all', or 'auto' (the seeds, or a sweep's members,
    spread over as many devices as divide them, and shards stay together: on a CPU the
    command line makes each core a device, so several seeds use every core). Seeds spread
    over devices first (they never communicate); the remaining devices split each seed's
    shards, which average their gradients. The global batch does not depend on it."""
    acting_lag: Literal[0, 1] = 0
    """Environments that step on the host only: updates by which the parameters that act
    trail the learner's. 0: act with the latest parameters, then learn (synchronous, and
    reproducible to the bit). 1: the environments step the next batch while the learner
    updates on the last one, so that batch acts with the parameters from before the update
    running beside it (on-policy: batch k+1 with update k's parameters while update k+1
    learns from batch k; off-policy: the next train_every steps with the parameters from
    before the learning phase that runs meanwhile). Each run call (one log interval) starts
    from the latest parameters and ends with its last batch learned."""
    actor_device: str | None = None
    """Environments that step on the host only: the device whose programs choose the
    actions, apart from the learner's: an index into jax.devices() ('1'), or a platform
    and index ('cpu:0'). None: the learner's device, which runs one program at a time, so
    there acting waits for an update to end. On a CPU the command line makes each core a
    device."""

    @property
    def num_members(self) -> int:
        """Members trained at once: ``num_seeds`` times the sweep's grid points."""
        return num_members(self)

    def member_configs(self) -> list:
        """Every member's configuration in seed-axis order (the config itself, without a sweep).

        Raises:
            ValueError: a sweep entry that is malformed, names a field that cannot be swept,
                or makes an invalid configuration.
        """
        return member_configs(self)

    def with_shards(self) -> Self:
        """This configuration with ``num_shards`` set: as given, or chosen for its devices.

        ``None`` becomes the data axis's device count (1 on one device, or where the seeds
        take every device): the smallest count those devices can split. The agent's
        ``validate`` then checks it as if it had been given.
        """
        if self.num_shards is not None:
            return self
        self._check_devices()
        return dataclasses.replace(self, num_shards=mesh_shape(self.num_members, self.devices)[1])

    def validated(self) -> Self:
        """This configuration with ``num_shards`` set (:meth:`with_shards`), validated.

        Raises:
            ValueError: naming the first inconsistent field and what would work.
        """
        config = self.with_shards()
        config.validate()
        return config

    def _check_devices(self) -> None:
        """Raise a ``ValueError`` unless ``devices`` is a positive count, 'all' or 'auto'."""
        devices = self.devices
        if devices not in ("all", "auto") and (
            isinstance(devices, bool) or not isinstance(devices, int) or devices < 1
        ):
            raise ValueError(
                f"{type(self).__name__}.devices must be a positive integer, 'all' or 'auto', "
                f"got {devices!r}."
            )

    def validate_scale(self, shard_divides: tuple[str, ...]) -> None:
        """Check the fields above, and that ``num_shards`` divides each of ``shard_divides``.

        A sweep is checked point by point (each point's configuration validates).

        Raises:
            ValueError: naming the field, its value and what would work.
        """
        check_fields(self, "positive_int", "num_seeds")
        if self.num_shards is not None:
            check_fields(self, "positive_int", "num_shards")
        name = type(self).__name__
        self._check_devices()
        for field in shard_divides:
            value = getattr(self, field)
            if self.num_shards is not None and value % self.num_shards:
                fits = [k for k in range(1, min(value, 64) + 1) if value % k == 0]
                raise ValueError(
                    f"{name}.num_shards={self.num_shards} must divide {field}={value} (each "
                    f"shard takes an equal share); valid values include {fits}."
                )
        if self.acting_lag not in (0, 1):
            raise ValueError(f"{name}.acting_lag must be 0 or 1, got {self.acting_lag!r}.")
        if self.actor_device is not None:
            parse_device(self.actor_device, f"{name}.actor_device")
        if self.sweep:
            self.member_configs()
