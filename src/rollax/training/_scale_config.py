"""The configuration fields every agent shares for how many seeds it trains, and where."""

from __future__ import annotations

import dataclasses
from typing import Literal

from rollax.training._validate import check_fields

__all__ = ["ScaleConfig"]


@dataclasses.dataclass(frozen=True)
class ScaleConfig:
    """Seeds, shards and devices: the base of every agent's configuration.

    None of these changes what one seed computes from its global batch, except
    ``num_shards``, which says how that batch is split (and is therefore the value results
    depend on, never the device count).
    """

    num_seeds: int = 1
    """Independent seeds trained at once in one compiled program (their environments,
    parameters and randomness are their own: adding a seed changes no other seed's run)."""
    num_shards: int = 1
    """Logical shards of each seed's environments: each shard steps num_envs / num_shards
    environments and takes its share of the minibatches (PPO shuffles within a shard) or of
    the replay (off-policy agents: each shard samples batch_size / num_shards from its own
    buffer of buffer_size / num_shards), and the shards average their gradients. Devices on
    the data axis each take whole shards, so one device runs the same shards as four."""
    devices: int | Literal["all"] = 1
    """Devices to train on, a count or 'all'. Seeds spread over devices first (they never
    communicate); the remaining devices split each seed's shards, which average their
    gradients. The global batch does not depend on it."""

    def validate_scale(self, shard_divides: tuple[str, ...]) -> None:
        """Check the fields above, and that ``num_shards`` divides each of ``shard_divides``.

        Raises:
            ValueError: naming the field, its value and what would work.
        """
        check_fields(self, "positive_int", "num_seeds", "num_shards")
        name = type(self).__name__
        devices = self.devices
        if devices != "all" and (
            isinstance(devices, bool) or not isinstance(devices, int) or devices < 1
        ):
            raise ValueError(
                f"{name}.devices must be a positive integer or 'all', got {devices!r}."
            )
        for field in shard_divides:
            value = getattr(self, field)
            if value % self.num_shards:
                fits = [k for k in range(1, min(value, 64) + 1) if value % k == 0]
                raise ValueError(
                    f"{name}.num_shards={self.num_shards} must divide {field}={value} (each "
                    f"shard takes an equal share); valid values include {fits}."
                )
