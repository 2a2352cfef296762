"""Replay buffer throughput and memory: rollax.buffers next to flashbax.

Two item kinds, each a dict ``{"obs", "action": int32 (), "reward": float32 (),
"terminated": bool (), "truncated": bool ()}``:
  * ``vector``: obs float32 ``(4,)``, ``--vector-capacity`` transitions (1,000,000);
  * ``image``: obs uint8 ``(84, 84, 3)``, ``--image-capacity`` transitions (100,000).

``--num-envs`` environments (256) add one step each per ``add``. A capacity is rounded down to
a multiple of ``--num-envs`` (rollax requires it; flashbax keeps ``capacity // add_batch_size``
steps per environment anyway), so both libraries store exactly the same number of steps.
The pairs compared:
  * rollax ``TransitionBuffer`` against flashbax ``make_flat_buffer(max_length=capacity,
    add_batch_size=num_envs, sample_batch_size=batch)``;
  * rollax ``SequenceBuffer(sequence_length=L, period=1)`` against flashbax
    ``make_trajectory_buffer(max_length_time_axis=capacity // num_envs,
    sample_sequence_length=L, period=1)`` (L is ``--sequence-length``, 40);
  * rollax ``TransitionBuffer(prioritized=True)`` against flashbax
    ``make_prioritised_flat_buffer`` (same sizes, priority exponent 0.6).

Measured for each pair, every figure a median over ``--repeats`` timed runs after one
warm-up run (which compiles):
  * ``add_per_call``: transitions/s of ``--calls`` Python calls of the jitted add
    (``donate_argnums=0``) of one step of every environment, blocked on at the end;
  * ``add_scan``: transitions/s of ``--scan-steps`` adds inside one jitted ``lax.scan``
    whose carried state is donated;
  * ``sample``: transitions/s (``batch * 1``) of ``--calls`` jitted ``sample`` calls of
    ``--batch-size`` (256) transitions on a full buffer, at most 4 calls queued. flashbax's
    flat buffer reads two consecutive steps per transition (its ``first``/``second`` pair),
    rollax's one step;
  * ``sample_sequence``: transitions/s (``batch * L``) of the sequence buffers, likewise;
  * ``prioritized_add_per_call``, ``prioritized_sample`` (L=1) and
    ``update_priorities`` (priorities set per second, ``--batch-size`` per call, on the
    indices of one sample) for the prioritized pair, on a full buffer;
  * ``memory``: each library's transition buffer initialised and filled completely with its
    jitted, donated one-step add, in a fresh subprocess (the same script with the hidden
    ``--memory-child`` flag) so nothing else is resident. Reported: the peak resident memory
    minus a baseline taken after imports, compilation and building the added batch,
    ``storage_bytes`` (the nbytes of the state's leaves) and ``peak_over_storage``.
    ``memory_no_donate`` (image only): the same fill, then ``--undonated-adds`` adds jitted
    *without* donation, each waited for, which must keep the old and the new storage alive
    together (a whole fill without donation copies the full storage at every add, minutes at
    this size; the peak is reached at the first such add; calls left queued without waiting
    can each hold one more copy). The peak is the kernel's ``VmHWM`` of the child,
    reset after the baseline through ``/proc/self/clear_refs``: ``getrusage``'s
    ``ru_maxrss`` also counts the parent's resident memory at ``exec``, so it would hide a
    child smaller than its parent. Without ``/proc`` it falls back to ``ru_maxrss``. These
    are host figures: on a GPU the storage lives in device memory, given as
    ``device_peak_bytes`` where JAX reports it.

Successors (``next_obs``), rollax against itself: the same items with a ``next_obs`` added
(one episode end per ``EPISODE_LENGTH`` steps of each environment, a truncation, so the true
final observation matters), in ``TransitionBuffer`` (``next_obs`` stored next to ``obs``)
and ``TransitionBuffer(compact=True)`` (each observation stored once, final observations on
the side). Reported: ``add_per_call``, ``add_scan``, ``sample`` (L=1), ``sample_sequence``
(``SequenceBuffer`` windows of ``--nstep`` steps, what an n-step learner samples),
``storage_bytes``, ``one_copy_bytes`` (capacity x the bytes of obs, action, reward and the
two flags) and ``over_one_copy``, and the same fill's peak resident memory. Ratios there are
compact / full (above 1: compact faster, or larger). flashbax's flat buffer also stores each
observation once, but reads ``obs[t + 1]`` as the successor, the next episode's first
observation at an episode end.

Every ``ratio`` is rollax / flashbax (above 1: rollax faster, or for memory, larger). The
last line printed is one JSON object with every figure.

Usage:
    python benchmarks/buffers.py [--num-envs 256] [--repeats 5] [--calls 100]
        [--scan-steps 100] [--kinds vector image] [--quick] [--no-memory] [--nstep 3]
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import jax
import jax.numpy as jnp

from _common import median_seconds
from _harness import Parser, emit, jax_info

OBS = {"vector": ((4,), jnp.float32), "image": ((84, 84, 3), jnp.uint8)}
FULL = {"vector_capacity": 1_000_000, "image_capacity": 100_000, "calls": 100, "scan_steps": 100}
IN_FLIGHT = 4  # sample calls queued at most before the oldest is waited for
EPISODE_LENGTH = 100  # steps per episode of every environment in the successor items
QUICK = {"vector_capacity": 64, "image_capacity": 48, "calls": 5, "scan_steps": 16}  # per env
FIGURES = [
    ("add_per_call", "add, per call", "transitions/s"),
    ("add_scan", "add, lax.scan", "transitions/s"),
    ("sample", "sample L=1", "transitions/s"),
    ("sample_sequence", "sample L={L}", "transitions/s"),
    ("prioritized_add_per_call", "prioritized add, per call", "transitions/s"),
    ("prioritized_sample", "prioritized sample L=1", "transitions/s"),
    ("update_priorities", "update priorities", "priorities/s"),
]


# ---------------------------------------------------------------------------- items
def example_item(kind: str) -> dict[str, jax.Array]:
    """One step of one environment."""
    shape, dtype = OBS[kind]
    return {
        "obs": jnp.zeros(shape, dtype),
        "action": jnp.zeros((), jnp.int32),
        "reward": jnp.zeros((), jnp.float32),
        "terminated": jnp.zeros((), bool),
        "truncated": jnp.zeros((), bool),
    }


def step_batch(kind: str, num_envs: int) -> dict[str, jax.Array]:
    """One step of every environment: leaves ``(num_envs, ...)``."""
    item = example_item(kind)
    return jax.tree.map(lambda x: jnp.ones((num_envs, *x.shape), x.dtype), item)


def nbytes(tree: Any) -> int:
    return sum(int(x.nbytes) for x in jax.tree.leaves(tree))


def _standard(fn: Callable) -> Callable:
    """``fn`` traced under standard dtype promotion (flashbax relies on it)."""

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        with jax.numpy_dtype_promotion("standard"):
            return fn(*args, **kwargs)

    return wrapped


# ---------------------------------------------------------------------------- buffers
def rollax_buffers(capacity: int, num_envs: int, batch: int, length: int) -> SimpleNamespace:
    """rollax's buffers behind the interface the benchmark uses.

    ``init``/``add`` are plain functions (jitted by the caller); the samplers are jitted with
    ``static_argnames="batch_size"`` as rollax documents.
    """
    from rollax.buffers import SequenceBuffer, TransitionBuffer

    flat = TransitionBuffer(capacity=capacity, num_envs=num_envs)
    seq = SequenceBuffer(capacity=capacity, num_envs=num_envs, sequence_length=length, period=1)
    prio = TransitionBuffer(capacity=capacity, num_envs=num_envs, prioritized=True)
    sample = jax.jit(flat.sample, static_argnames="batch_size")
    sample_seq = jax.jit(seq.sample, static_argnames="batch_size")
    prio_sample = jax.jit(prio.sample, static_argnames="batch_size")
    return SimpleNamespace(
        init=flat.init,
        add=flat.add,
        sample=lambda state, key: sample(state, key, batch_size=batch),
        # The sequence buffer's state is the transition buffer's (same storage, no sum tree).
        sample_sequence=lambda state, key: sample_seq(state, key, batch_size=batch),
        prio_init=prio.init,
        prio_add=prio.add,
        prio_sample=lambda state, key: prio_sample(state, key, batch_size=batch),
        prio_index=lambda out: out.index,
        prio_update=prio.update_priorities,
    )


def flashbax_buffers(capacity: int, num_envs: int, batch: int, length: int) -> SimpleNamespace:
    """flashbax's buffers, sized like rollax's, behind the same interface."""
    import flashbax as fbx

    flat = fbx.make_flat_buffer(
        max_length=capacity, min_length=num_envs, sample_batch_size=batch, add_batch_size=num_envs
    )
    traj = fbx.make_trajectory_buffer(
        add_batch_size=num_envs,
        sample_batch_size=batch,
        sample_sequence_length=length,
        period=1,
        min_length_time_axis=length,
        max_length_time_axis=capacity // num_envs,
    )
    backend = jax.default_backend()
    prio = fbx.make_prioritised_flat_buffer(
        max_length=capacity,
        min_length=num_envs,
        sample_batch_size=batch,
        add_batch_size=num_envs,
        priority_exponent=0.6,
        device=backend if backend in ("cpu", "gpu", "tpu") else "cpu",
    )
    return SimpleNamespace(
        init=_standard(flat.init),
        add=_standard(flat.add),
        sample=jax.jit(_standard(flat.sample)),
        # The trajectory buffer's state is the flat buffer's (same time axis and batch axis).
        sample_sequence=jax.jit(_standard(traj.sample)),
        prio_init=_standard(prio.init),
        prio_add=_standard(prio.add),
        prio_sample=jax.jit(_standard(prio.sample)),
        prio_index=lambda out: out.indices,
        prio_update=_standard(prio.set_priorities),
    )


BUFFERS = {"rollax": rollax_buffers, "flashbax": flashbax_buffers}


# ---------------------------------------------------------------------------- successors
def successor_item(kind: str) -> dict[str, jax.Array]:
    """One step of one environment with its ``next_obs``."""
    item = example_item(kind)
    return {**item, "next_obs": item["obs"]}


def successor_batch(kind: str, num_envs: int) -> dict[str, jax.Array]:
    """One step of every environment with ``next_obs``: leaves ``(num_envs, ...)``."""
    item = successor_item(kind)
    return jax.tree.map(lambda x: jnp.ones((num_envs, *x.shape), x.dtype), item)


def with_episode_ends(add: Callable, num_envs: int) -> Callable:
    """``add`` of items whose ``truncated`` flag ends each environment's episodes every
    ``EPISODE_LENGTH`` steps (staggered over environments), counted from the state."""
    offset = jnp.arange(num_envs, dtype=jnp.int32)

    def add_step(state: Any, batch: dict) -> Any:
        truncated = (state.steps + offset) % EPISODE_LENGTH == EPISODE_LENGTH - 1
        return add(
            state, {**batch, "terminated": jnp.zeros_like(truncated), "truncated": truncated}
        )

    return add_step


def successor_buffers(compact: bool, capacity: int, num_envs: int, batch: int, nstep: int):
    """A transition buffer (full or compact) and its n-step sampler, as the benchmark uses."""
    from rollax.buffers import SequenceBuffer, TransitionBuffer

    # One state serves both samplers, so both keep the same final observations.
    slots = max(nstep, capacity // num_envs // 64) if compact else None
    flat = TransitionBuffer(
        capacity=capacity, num_envs=num_envs, compact=compact, final_obs_slots=slots
    )
    seq = SequenceBuffer(
        capacity=capacity,
        num_envs=num_envs,
        sequence_length=nstep,
        compact=compact,
        final_obs_slots=slots,
    )
    sample = jax.jit(flat.sample, static_argnames="batch_size")
    sample_seq = jax.jit(seq.sample, static_argnames="batch_size")
    return SimpleNamespace(
        init=flat.init,
        add=with_episode_ends(flat.add, num_envs),
        sample=lambda state, key: sample(state, key, batch_size=batch),
        sample_sequence=lambda state, key: sample_seq(state, key, batch_size=batch),
    )


SUCCESSOR_FIGURES = [
    ("add_per_call", "add, per call", "transitions/s"),
    ("add_scan", "add, lax.scan", "transitions/s"),
    ("sample", "sample L=1", "transitions/s"),
    ("sample_sequence", "sample n-step windows", "windows/s"),
]


def bench_successors(kind: str, args: argparse.Namespace, capacity: int) -> dict:
    """Full against compact transition buffers: throughput and storage."""
    keys = list(jax.random.split(jax.random.key(0), args.calls))
    shape, dtype = OBS[kind]
    item_bytes = math.prod(shape) * jnp.dtype(dtype).itemsize + 4 + 4 + 1 + 1
    table: dict[str, Any] = {"one_copy_bytes": capacity * item_bytes}
    for variant in ("full", "compact"):
        table[variant] = _bench_successor_variant(variant, kind, args, capacity, keys)
        table[variant]["over_one_copy"] = table[variant]["storage_bytes"] / table["one_copy_bytes"]
    table["ratio"] = {
        key: table["compact"][key] / table["full"][key]
        for key in ("storage_bytes", *(k for k, _, _ in SUCCESSOR_FIGURES))
    }
    return table


def _bench_successor_variant(
    variant: str, kind: str, args: argparse.Namespace, capacity: int, keys: list
) -> dict:
    """Throughput and storage of the full or the compact transition buffer."""
    n, calls, steps, batch_size = args.num_envs, args.calls, args.scan_steps, args.batch_size
    batch = successor_batch(kind, n)
    buffers = successor_buffers(variant == "compact", capacity, n, batch_size, args.nstep)
    carried = Carried(jax.jit(buffers.init)(successor_item(kind)))
    row: dict[str, float] = {"storage_bytes": nbytes(carried.state)}
    seconds = add_per_call(buffers.add, carried, batch, calls, args.repeats)
    row["add_per_call"] = calls * n / seconds
    add_many = scan_adder(buffers.add, steps)
    seconds = median_seconds(lambda: _rebind(add_many, carried, batch), args.repeats)
    row["add_scan"] = steps * n / seconds
    fill(add_many, carried, batch, steps, capacity // n)
    seconds = sample_seconds(buffers.sample, carried.state, keys, args.repeats)
    row["sample"] = calls * batch_size / seconds
    seconds = sample_seconds(buffers.sample_sequence, carried.state, keys, args.repeats)
    row["sample_sequence"] = calls * batch_size / seconds
    return row


def print_successors(kind: str, table: dict, args: argparse.Namespace) -> None:
    print(
        f"{kind} with next_obs: one copy of obs + action + reward + flags = "
        f"{_mib(table['one_copy_bytes'])}; n-step windows of {args.nstep}"
    )
    print(f"  {'figure':42s} {'full':>16s} {'compact':>16s} {'compact/full':>13s}")
    for key in ("storage_bytes",):
        f, c = table["full"][key], table["compact"][key]
        print(f"  {'storage':42s} {_mib(f):>16s} {_mib(c):>16s} {table['ratio'][key]:>12.2f}x")
        print(
            f"  {'  over one copy':42s} {table['full']['over_one_copy']:>15.3f}x "
            f"{table['compact']['over_one_copy']:>15.3f}x"
        )
    for key, label, unit in SUCCESSOR_FIGURES:
        name = f"{label} ({unit})"
        f, c = table["full"][key], table["compact"][key]
        print(f"  {name:42s} {f:>16,.0f} {c:>16,.0f} {table['ratio'][key]:>12.2f}x")
    if "memory" in table["full"]:
        f, c = table["full"]["memory"], table["compact"]["memory"]
        ratio = c["peak_bytes"] / f["peak_bytes"] if f["peak_bytes"] > 0 else float("nan")
        table["ratio"]["memory"] = ratio
        print(
            f"  {'peak RSS, donated add':42s} {_mib(f['peak_bytes']):>16s} "
            f"{_mib(c['peak_bytes']):>16s} {ratio:>12.2f}x"
        )
    sys.stdout.flush()


# ---------------------------------------------------------------------------- timing
class Carried:
    """A buffer state updated in place by donated calls, so timed runs can rebind it."""

    def __init__(self, state: Any) -> None:
        self.state = state


def add_per_call(add: Callable, carried: Carried, batch: Any, calls: int, repeats: int) -> float:
    """Seconds for ``calls`` Python calls of the jitted, donated ``add``."""
    add = jax.jit(add, donate_argnums=0)

    def run() -> Any:
        state = carried.state
        for _ in range(calls):
            state = add(state, batch)
        carried.state = state
        return state

    return median_seconds(run, repeats)


def scan_adder(add: Callable, steps: int) -> Callable:
    """A jitted function adding ``batch`` ``steps`` times in a ``lax.scan`` (state donated)."""

    @functools.partial(jax.jit, donate_argnums=0)
    def add_many(state: Any, batch: Any) -> Any:
        def body(state: Any, _: None) -> tuple[Any, None]:
            return add(state, batch), None

        return jax.lax.scan(body, state, None, length=steps)[0]

    return add_many


def fill(add_many: Callable, carried: Carried, batch: Any, steps: int, steps_per_env: int) -> None:
    """Add ``steps_per_env`` steps (or more) with the scan adder, so the buffer is full."""
    for _ in range(math.ceil(steps_per_env / steps)):
        carried.state = add_many(carried.state, batch)
    jax.block_until_ready(carried.state)


def sample_seconds(sample: Callable, state: Any, keys: list, repeats: int) -> float:
    """Seconds for one jitted ``sample`` call per key, with at most ``IN_FLIGHT`` queued.

    Only the smallest leaf of each output is kept (every leaf of one call is ready together);
    bounding the queue bounds the memory of outputs not yet computed (216 MB per call for
    image sequences).
    """

    def run() -> list:
        pending: list = []
        for key in keys:
            pending.append(min(jax.tree.leaves(sample(state, key)), key=lambda x: x.size))
            if len(pending) > IN_FLIGHT:
                pending.pop(0).block_until_ready()
        return pending

    return median_seconds(run, repeats)


def update_seconds(
    update: Callable, carried: Carried, index: jax.Array, priorities: list, repeats: int
) -> float:
    """Seconds for one jitted, donated priority update per array of ``priorities``."""
    update = jax.jit(update, donate_argnums=0)

    def run() -> Any:
        state = carried.state
        for priority in priorities:
            state = update(state, index, priority)
        carried.state = state
        return state

    return median_seconds(run, repeats)


def bench_library(lib: str, kind: str, args: argparse.Namespace, capacity: int) -> dict:
    """Every timed figure of one library for one item kind."""
    n, calls, steps, batch_size = args.num_envs, args.calls, args.scan_steps, args.batch_size
    steps_per_env = capacity // n
    buffers = BUFFERS[lib](capacity, n, batch_size, args.sequence_length)
    batch = step_batch(kind, n)
    keys = list(jax.random.split(jax.random.key(0), calls))
    row: dict[str, float] = {}

    carried = Carried(jax.jit(buffers.init)(example_item(kind)))
    row["storage_bytes"] = nbytes(carried.state)
    row["add_per_call"] = calls * n / add_per_call(buffers.add, carried, batch, calls, args.repeats)
    add_many = scan_adder(buffers.add, steps)
    seconds = median_seconds(lambda: _rebind(add_many, carried, batch), args.repeats)
    row["add_scan"] = steps * n / seconds
    fill(add_many, carried, batch, steps, steps_per_env)
    seconds = sample_seconds(buffers.sample, carried.state, keys, args.repeats)
    row["sample"] = calls * batch_size / seconds
    seconds = sample_seconds(buffers.sample_sequence, carried.state, keys, args.repeats)
    row["sample_sequence"] = calls * batch_size * args.sequence_length / seconds
    del carried

    carried = Carried(jax.jit(buffers.prio_init)(example_item(kind)))
    seconds = add_per_call(buffers.prio_add, carried, batch, calls, args.repeats)
    row["prioritized_add_per_call"] = calls * n / seconds
    fill(scan_adder(buffers.prio_add, steps), carried, batch, steps, steps_per_env)
    seconds = sample_seconds(buffers.prio_sample, carried.state, keys, args.repeats)
    row["prioritized_sample"] = calls * batch_size / seconds
    index = buffers.prio_index(buffers.prio_sample(carried.state, keys[0]))
    priorities = list(jax.random.uniform(jax.random.key(1), (calls, batch_size), jnp.float32))
    seconds = update_seconds(buffers.prio_update, carried, index, priorities, args.repeats)
    row["update_priorities"] = calls * batch_size / seconds
    return row


def _rebind(add_many: Callable, carried: Carried, batch: Any) -> Any:
    carried.state = add_many(carried.state, batch)
    return carried.state


# ---------------------------------------------------------------------------- memory
def _status_kib(field: str) -> int | None:
    """A ``/proc/self/status`` figure in KiB (``VmRSS``, ``VmHWM``), None without /proc."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_peak() -> bool:
    """Reset the kernel's peak RSS (``VmHWM``) to the current RSS; False where unsupported."""
    try:
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")
    except OSError:
        return False
    return _status_kib("VmHWM") is not None


def _peak_kib(use_hwm: bool) -> int:
    if use_hwm:
        return _status_kib("VmHWM")
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux


def memory_child(lib: str, kind: str, donate: bool, args: argparse.Namespace) -> None:
    """Fill one transition buffer in this (fresh) process; print its memory as one JSON line."""
    capacity = _capacities(args)[kind]
    n = args.num_envs
    if lib in ("full", "compact"):
        buffers = successor_buffers(lib == "compact", capacity, n, args.batch_size, 1)
        example, batch = successor_item(kind), successor_batch(kind, n)
    else:
        buffers = BUFFERS[lib](capacity, n, min(args.batch_size, capacity), 1)
        example, batch = example_item(kind), step_batch(kind, n)
    spec = jax.eval_shape(buffers.init, example)
    init = jax.jit(buffers.init).lower(example).compile()
    add = jax.jit(buffers.add, donate_argnums=0).lower(spec, batch).compile()
    copy_add = jax.jit(buffers.add).lower(spec, batch).compile()
    jax.block_until_ready(batch)
    use_hwm = _reset_peak()
    baseline = _status_kib("VmRSS") if use_hwm else _peak_kib(False)
    start = time.perf_counter()
    state = init(example)
    for _ in range(capacity // n):
        state = add(state, batch)
    if not donate:
        for _ in range(args.undonated_adds):
            # Waited for one by one: queued calls would each hold a storage of their own.
            state = jax.block_until_ready(copy_add(state, batch))
    jax.block_until_ready(state)
    seconds = time.perf_counter() - start
    peak = (_peak_kib(use_hwm) - baseline) * 1024
    storage = nbytes(state)
    stats = jax.devices()[0].memory_stats() or {}
    out = {
        "lib": lib,
        "kind": kind,
        "donate": donate,
        "storage_bytes": storage,
        "peak_bytes": peak,
        "peak_over_storage": peak / storage,
        "baseline_bytes": baseline * 1024,
        "peak_source": "VmHWM" if use_hwm else "ru_maxrss",
        "fill_seconds": seconds,
    }
    if "peak_bytes_in_use" in stats:
        out["device_peak_bytes"] = int(stats["peak_bytes_in_use"])
    print(json.dumps(out))


def measure_memory(lib: str, kind: str, donate: bool, args: argparse.Namespace) -> dict:
    """Run :func:`memory_child` in a fresh interpreter and return its figures."""
    command = [
        sys.executable,
        os.path.abspath(__file__),
        "--memory-child",
        lib,
        kind,
        "donate" if donate else "copy",
        *("--num-envs", str(args.num_envs), "--batch-size", str(args.batch_size)),
        *("--vector-capacity", str(args.vector_capacity)),
        *("--image-capacity", str(args.image_capacity)),
        *("--undonated-adds", str(args.undonated_adds)),
    ]
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    figures = json.loads(result.stdout.strip().splitlines()[-1])
    return {k: v for k, v in figures.items() if k not in ("lib", "kind", "donate")}


# ---------------------------------------------------------------------------- report
def _capacities(args: argparse.Namespace) -> dict[str, int]:
    """Capacities rounded down to a multiple of ``--num-envs``."""
    n = args.num_envs
    return {
        "vector": args.vector_capacity // n * n,
        "image": args.image_capacity // n * n,
    }


def _mib(x: float) -> str:
    return f"{x / 2**20:,.1f} MiB"


def print_kind(kind: str, table: dict, args: argparse.Namespace) -> None:
    print(
        f"{kind}: obs {OBS[kind][1].__name__}{OBS[kind][0]}, capacity {table['capacity']:,} "
        f"transitions ({args.num_envs} envs x {table['capacity'] // args.num_envs:,} steps), "
        f"storage {_mib(table['rollax']['storage_bytes'])} (rollax) / "
        f"{_mib(table['flashbax']['storage_bytes'])} (flashbax)"
    )
    print(f"  {'figure':42s} {'rollax':>16s} {'flashbax':>16s} {'rollax/fbx':>11s}")
    for key, label, unit in FIGURES:
        name = f"{label.format(L=args.sequence_length)} ({unit})"
        r, f = table["rollax"][key], table["flashbax"][key]
        print(f"  {name:42s} {r:>16,.0f} {f:>16,.0f} {table['ratio'][key]:>10.2f}x")
    for key, label in (("memory", "donated add"), ("memory_no_donate", "add w/o donation")):
        if key not in table["rollax"]:
            continue
        r, f = table["rollax"][key], table["flashbax"][key]
        print(
            f"  {'peak RSS, ' + label:42s} {_mib(r['peak_bytes']):>16s} "
            f"{_mib(f['peak_bytes']):>16s} {table['ratio'][key]:>10.2f}x"
        )
        print(
            f"  {'  peak / storage':42s} {r['peak_over_storage']:>15.2f}x "
            f"{f['peak_over_storage']:>15.2f}x"
        )
    sys.stdout.flush()


def main() -> None:
    parser = Parser(__doc__)
    parser.add_argument("--num-envs", type=int, default=256, help="environments per add")
    parser.repeats(5)
    parser.add_argument("--calls", type=int, help="Python calls per timed run (default 100)")
    parser.add_argument("--scan-steps", type=int, help="adds per timed lax.scan (default 100)")
    parser.add_argument("--batch-size", type=int, default=256, help="sampled per call")
    parser.add_argument("--sequence-length", type=int, default=40)
    parser.add_argument("--nstep", type=int, default=3, help="window of the successor rows")
    parser.add_argument("--vector-capacity", type=int, help="transitions (default 1,000,000)")
    parser.add_argument("--image-capacity", type=int, help="transitions (default 100,000)")
    parser.choice("--kinds", OBS)
    parser.add_argument(
        "--undonated-adds", type=int, default=4, help="adds without donation (image memory)"
    )
    parser.add_argument("--no-memory", action="store_true", help="skip the memory subprocesses")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke-test sizes: capacities of 64 (vector) and 48 (image) steps per environment, "
        "5 calls, 16 scan steps (explicit flags win)",
    )
    parser.add_argument("--memory-child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    for name, full in FULL.items():
        if getattr(args, name) is None:
            quick = QUICK[name] * (args.num_envs if name.endswith("capacity") else 1)
            setattr(args, name, quick if args.quick else full)

    if args.memory_child:
        lib, kind, mode = args.memory_child
        memory_child(lib, kind, mode == "donate", args)
        return

    capacities = _capacities(args)
    # Memory first, in fresh subprocesses, while this process holds no buffer.
    memory: dict[tuple[str, str, str], dict] = {}
    if not args.no_memory:
        for kind in args.kinds:
            for lib in BUFFERS:
                memory[lib, kind, "memory"] = measure_memory(lib, kind, True, args)
                if kind == "image":
                    memory[lib, kind, "memory_no_donate"] = measure_memory(lib, kind, False, args)
            for variant in ("full", "compact"):
                memory[variant, kind, "memory"] = measure_memory(variant, kind, True, args)

    results: dict[str, dict] = {}
    for kind in args.kinds:
        table: dict[str, Any] = {"capacity": capacities[kind]}
        for lib in BUFFERS:
            table[lib] = bench_library(lib, kind, args, capacities[kind])
            for (mlib, mkind, key), figures in memory.items():
                if (mlib, mkind) == (lib, kind):
                    table[lib][key] = figures
        ratio = {key: table["rollax"][key] / table["flashbax"][key] for key, _, _ in FIGURES}
        for key in ("memory", "memory_no_donate"):
            if key in table["rollax"]:
                r, f = table["rollax"][key]["peak_bytes"], table["flashbax"][key]["peak_bytes"]
                ratio[key] = r / f if f > 0 else float("nan")
        table["ratio"] = ratio
        results[kind] = table
        print_kind(kind, table, args)
        successors = bench_successors(kind, args, capacities[kind])
        for variant in ("full", "compact"):
            if (variant, kind, "memory") in memory:
                successors[variant]["memory"] = memory[variant, kind, "memory"]
        print_successors(kind, successors, args)
        table["successors"] = successors
    emit({"benchmark": "buffers", **jax_info(), "args": vars(args), "results": results})


if __name__ == "__main__":
    main()
