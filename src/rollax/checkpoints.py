"""Checkpoints of whole training states with Orbax: atomic, pickle-free, checked on restore.

A checkpoint is one directory per step under a root directory, written by Orbax (arrays in
its own format, the configuration as JSON), first to a temporary name and renamed when
complete: an interrupted save never shadows the previous checkpoint. Old checkpoints are
renamed away before they are deleted, so a kill never leaves one half-deleted either. What
an interrupted save or deletion leaves is ignored; :meth:`Checkpointer.tidy` removes it, and
the old checkpoints a kill kept from being deleted. Restoring checks the stored arrays
against the state the caller expects (built with ``jax.eval_shape`` of the trainer's
``init``), so a checkpoint from another configuration or environment is a clear error
instead of silently wrong arrays.

Typed PRNG keys are stored as their raw key data with the name of their implementation and
wrapped again on restore, so restoring gives exactly the keys that were saved.

Arrays sharded over several devices or processes are saved shard by shard by every process
(each writes what it holds), and restored straight into the shardings the caller asks for,
which may be another layout than the one that saved them: nothing passes through one host.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import orbax.checkpoint as ocp

from rollax._files import wrote

__all__ = ["CheckpointError", "Checkpointer"]


class CheckpointError(ValueError):
    """A checkpoint that is missing, damaged, or does not fit the state being restored."""


def _is_key(x: Any) -> bool:
    return hasattr(x, "dtype") and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)


def _is_empty(x: Any) -> bool:
    """Whether a leaf holds no values (a zero in its shape, as MJX's ``act`` often has).

    Orbax cannot store one, so a checkpoint holds it as nothing, and restoring gives zeros of
    the target's shape.
    """
    return not _is_key(x) and 0 in np.shape(x)


def _reason(e: Exception) -> str:
    """The first, readable part of an Orbax/TensorStore error."""
    text = str(e).split(" [tensorstore_spec")[0].strip()
    return f"{type(e).__name__}: {text[:300]}"


def _entry_name(entry: Any) -> str:
    for attr in ("key", "name", "idx"):
        if hasattr(entry, attr):
            return str(getattr(entry, attr))
    return str(entry)


def _path_names(tree: Any) -> list[str]:
    """``a/b/0``-style names of the leaves (attributes, dict keys and indices alike)."""
    return [
        "/".join(_entry_name(e) for e in path)
        for path, _ in jax.tree_util.tree_leaves_with_path(tree)
    ]


_INCOMPLETE = ".orbax-checkpoint-tmp"
"""In the name of a directory that is no complete checkpoint: Orbax's suffix for a save in
progress, which Orbax never lists as a step (a checkpoint being deleted takes it too)."""


class Checkpointer:
    """Saves and restores training states under one directory, one subdirectory per step.

    Args:
        directory: Where checkpoints live (created on the first save).
        max_to_keep: How many of the most recent checkpoints to keep (older ones are deleted
            after a newer one is complete).
    """

    def __init__(self, directory: str | Path, max_to_keep: int = 3) -> None:
        if isinstance(max_to_keep, bool) or not isinstance(max_to_keep, int) or max_to_keep < 1:
            raise ValueError(f"max_to_keep must be a positive integer, got {max_to_keep!r}.")
        self.directory = Path(directory).absolute()
        self.max_to_keep = max_to_keep
        self._manager = ocp.CheckpointManager(
            self.directory,
            # Old checkpoints are deleted here (_discard), not by Orbax, which deletes in place.
            options=ocp.CheckpointManagerOptions(create=False, enable_async_checkpointing=False),
            item_handlers={
                "state": ocp.StandardCheckpointHandler(),
                "config": ocp.JsonCheckpointHandler(),
                "keys": ocp.JsonCheckpointHandler(),
            },
        )

    def steps(self) -> list[int]:
        """The steps of the complete checkpoints, oldest first."""
        if not self.directory.is_dir():
            return []
        self._manager.reload()
        return sorted(self._manager.all_steps())

    def latest_step(self) -> int | None:
        """The step of the newest complete checkpoint, or ``None`` when there is none."""
        steps = self.steps()
        return steps[-1] if steps else None

    def save(self, step: int, state: Any, config: dict[str, Any]) -> Path:
        """Write ``state`` and ``config`` (JSON-serializable) as the checkpoint of ``step``.

        Then delete the checkpoints older than the newest ``max_to_keep``.

        Returns:
            The checkpoint's directory.
        """
        try:
            json.dumps(config)
        except TypeError as e:
            raise TypeError(f"Checkpointer.save: config must be JSON-serializable ({e}).") from e
        self.directory.mkdir(parents=True, exist_ok=True)
        leaves, treedef = jax.tree.flatten(state)
        impls = {
            name: str(jax.random.key_impl(leaf))
            for name, leaf in zip(_path_names(state), leaves, strict=True)
            if _is_key(leaf)
        }
        stored = jax.tree.unflatten(
            treedef,
            [None if _is_empty(x) else jax.random.key_data(x) if _is_key(x) else x for x in leaves],
        )
        self._manager.save(
            step,
            args=ocp.args.Composite(
                state=ocp.args.StandardSave(stored),
                config=ocp.args.JsonSave(config),
                keys=ocp.args.JsonSave(impls),
            ),
            force=True,
        )
        self._manager.wait_until_finished()
        wrote(self.directory / str(step))
        self._delete_old()
        return self.directory / str(step)

    def tidy(self) -> None:
        """Finish what a killed save or deletion left undone (only while none is in progress).

        Deletes incomplete checkpoints (Orbax ignores them, but each can take the space of a
        whole one) and the checkpoints older than the newest ``max_to_keep``.
        """
        if jax.process_index() == 0 and self.directory.is_dir():
            for path in self.directory.glob(f"*{_INCOMPLETE}*"):
                shutil.rmtree(path, ignore_errors=True)
        self._delete_old()

    def _delete_old(self) -> None:
        """Delete the checkpoints older than the newest ``max_to_keep``."""
        if jax.process_index() == 0:  # as Orbax: the primary process deletes
            for old in self.steps()[: -self.max_to_keep]:
                self._discard(old)
        self._manager.reload()

    def _discard(self, step: int) -> None:
        """Delete the checkpoint of ``step``: renamed first, so it is whole or gone."""
        path = self.directory / str(step)
        doomed = path.with_name(f"{path.name}{_INCOMPLETE}-deleted")
        shutil.rmtree(doomed, ignore_errors=True)  # left by a deletion that was killed
        path.rename(doomed)
        wrote(doomed)
        shutil.rmtree(doomed)
        wrote(path)

    def read_config(self, step: int | None = None) -> dict[str, Any]:
        """The configuration stored with a checkpoint (the newest when ``step`` is None)."""
        step = self._existing_step(step)
        try:
            restored = self._manager.restore(
                step, args=ocp.args.Composite(config=ocp.args.JsonRestore())
            )
        except Exception as e:  # Orbax raises several types for unreadable files
            raise CheckpointError(
                f"The configuration of checkpoint {step} in {self.directory} cannot be read "
                f"({_reason(e)}); the checkpoint is damaged."
            ) from e
        return dict(restored["config"])

    def restore(
        self, target: Any, step: int | None = None, shardings: Any = None
    ) -> tuple[Any, dict[str, Any]]:
        """Restore a checkpoint into the structure of ``target``.

        Args:
            target: A state (or its ``jax.eval_shape``) with the expected structure, shapes
                and dtypes.
            step: Which checkpoint; the newest when ``None``.
            shardings: A tree like ``target`` with a ``jax.sharding.Sharding`` for each leaf
                (a key's applies to its key data): the arrays are read straight into them,
                each process reading only its shards. ``None``: uncommitted arrays on the
                default device.

        Returns:
            ``(state, config)``.

        Raises:
            CheckpointError: no checkpoint, a damaged one, or one whose arrays do not match
                ``target`` (naming the first mismatching entry).
        """
        step = self._existing_step(step)
        names = _path_names(target)
        leaves, treedef = jax.tree.flatten(target)
        expected = [jax.eval_shape(jax.random.key_data, x) if _is_key(x) else x for x in leaves]
        if shardings is None:
            # Read onto one device whatever layout wrote the checkpoint (several devices or
            # processes), then hand out uncommitted arrays (below).
            one = jax.sharding.SingleDeviceSharding(jax.local_devices()[0])
            placed = [one] * len(leaves)
        else:
            placed = jax.tree.leaves(shardings)
        if len(placed) != len(leaves):
            raise ValueError("Checkpointer.restore: shardings must give every leaf a sharding.")
        abstract = jax.tree.unflatten(
            treedef,
            [
                None if _is_empty(x) else jax.ShapeDtypeStruct(np.shape(x), x.dtype, sharding=s)
                for x, s in zip(expected, placed, strict=True)
            ],
        )
        kept = [i for i, x in enumerate(expected) if not _is_empty(x)]
        self._check_compatible(step, [names[i] for i in kept], [expected[i] for i in kept])
        try:
            restored = self._manager.restore(
                step,
                args=ocp.args.Composite(
                    state=ocp.args.StandardRestore(abstract),
                    config=ocp.args.JsonRestore(),
                    keys=ocp.args.JsonRestore(),
                ),
            )
        except Exception as e:  # Orbax raises several types for missing or truncated files
            raise CheckpointError(
                f"Checkpoint {step} in {self.directory} cannot be read ("
                f"{_reason(e)}); it is damaged or incomplete. Earlier complete checkpoints: "
                f"{[s for s in self.steps() if s != step] or 'none'}."
            ) from e
        impls = dict(restored["keys"])
        out = []
        restored_leaves = iter(jax.tree.leaves(restored["state"]))
        for name, want, s in zip(names, leaves, placed, strict=True):
            if _is_empty(want):  # stored as nothing: no values to read
                empty = jnp.zeros(np.shape(want), want.dtype)
                out.append(empty if shardings is None else jax.device_put(empty, s))
                continue
            got = next(restored_leaves)
            if shardings is None:
                # Orbax returns arrays committed to a device; fresh ones are not, and jit keys
                # its compiled programs on that too. Uncommitted, a restored state reuses them.
                got = jnp.asarray(np.asarray(got))
            if _is_key(want):
                out.append(jax.random.wrap_key_data(got, impl=impls[name]))
            else:
                out.append(got)
        return jax.tree.unflatten(treedef, out), dict(restored["config"])

    # ------------------------------------------------------------------ helpers

    def _existing_step(self, step: int | None) -> int:
        steps = self.steps()
        if not steps:
            raise CheckpointError(f"No complete checkpoint in {self.directory}.")
        if step is None:
            return steps[-1]
        if step not in steps:
            raise CheckpointError(
                f"No checkpoint for step {step} in {self.directory}; available: {steps}."
            )
        return step

    def _check_compatible(self, step: int, names: list[str], expected: list[Any]) -> None:
        """Compare the stored tree's entries, shapes and dtypes with what the caller expects."""
        try:
            meta = self._manager.item_metadata(step)["state"]
        except Exception as e:
            raise CheckpointError(
                f"The metadata of checkpoint {step} in {self.directory} cannot be read "
                f"({_reason(e)}); the checkpoint is damaged."
            ) from e
        if meta is None:
            raise CheckpointError(
                f"Checkpoint {step} in {self.directory} has no state; it is damaged."
            )
        stored = dict(zip(_path_names(meta), jax.tree.leaves(meta), strict=True))
        missing = [n for n in names if n not in stored]
        extra = [n for n in stored if n not in set(names)]
        if missing or extra:
            raise CheckpointError(
                f"Checkpoint {step} in {self.directory} holds a different state: "
                f"missing {missing[:3]}, unexpected {extra[:3]}. Was it written by another "
                f"algorithm or version?"
            )
        for name, want in zip(names, expected, strict=True):
            got = stored[name]
            if tuple(got.shape) != tuple(np.shape(want)) or np.dtype(got.dtype) != np.dtype(
                want.dtype
            ):
                raise CheckpointError(
                    f"Checkpoint {step} in {self.directory} does not fit: {name} is stored as "
                    f"{got.dtype}{list(got.shape)} but this run expects "
                    f"{want.dtype}{list(np.shape(want))} (a different environment, number of "
                    f"environments or seeds, or network?)."
                )
