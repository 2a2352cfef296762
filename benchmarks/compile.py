"""Cold-start compile cost: the programs a run compiles, rollax beside its peer's same program.

Each row is an algorithm and a task at the settings of the benchmarks that time it to a
threshold (``ppo_cartpole.py``, ``offpolicy.py``, ``returns.py``, ``gpu.py``), imported from
them. Every measurement runs in a process of its own, started afresh for each row, library
and repeat (the script runs itself with ``--worker ROW --lib LIB``), so nothing is compiled
before it starts: no in-memory cache, and no persistent cache (``jax_compilation_cache_dir``
unset and ``JAX_ENABLE_COMPILATION_CACHE=false`` in the worker's environment, rollax's runs
with ``RunConfig(compilation_cache=False)``; a hit of the persistent cache would be counted
as ``cache_hits``, which must be 0). Each worker prints one JSON line, which this script
reads.

What a worker measures, from ``jax.monitoring``: every ``backend_compile_duration`` event
(XLA's compilation of one program, tracing and lowering to StableHLO not included), named
after the jitted function (``jit(run_iterations)``). A program is *small* where that
function is one of JAX's own (an eager ``jnp`` or ``lax`` operation, a key split:
``jit(convert_element_type)``, ``jit(_threefry_split)``; Brax initializes its networks
with such operations, eagerly), *large* otherwise: the library's programs, each given a
role, *training* (rollax's ``init_global`` and ``run_iterations``, rejax's ``train``, which
holds its initialization; Brax's every program but its evaluation: its ``pmap``'d steps,
all named ``jit(_fun)`` on this JAX, and its environment's ``reset``) or *evaluation*
(rollax's ``run_episodes``, rejax's ``evaluate``, Brax's ``generate_eval_unroll``). Every
leg also gives its wall time from its start (after the imports) to the end of its last
large compilation.

The legs of a row:

- ``rollax``, **run**: the real ``rollax.runs.train`` for ``--iterations`` iterations
  (what compiles does not depend on the budget), final evaluation and checkpoint included:
  every program it compiles, summed, and the wall time from ``train`` to the end of the last
  large compilation (its warmup; creating the environment and tracing included).
  ``Agent.warmup`` compiles its programs side by side on threads, so on a machine with few
  cores each program's duration is stretched by the others': the sum is CPU time more than
  wall time.
- ``rollax``, **sequential**: the same agent (``get_algorithm(name).make``) and the same
  ``warmup`` call (the evaluations ``train`` passes it, ``rollax.runs._run.evaluations``,
  and the default params), its thread pool held to one worker, so that each program
  compiles alone, one after another: the seconds of each program. The **headline** figure
  is this leg's training programs (``init_global`` + ``run_iterations``); the second adds
  evaluation.
- peer: rejax 0.1.3's ``train`` with its own evaluation off (``_peers.rejax_agent``),
  compiled ahead of time as ``jax.jit(agent.train).lower(key).compile()`` (one program,
  initialization and training), and its evaluator (``_peers.rejax_evaluator``, as many
  episodes as rollax's final evaluation) compiled as ``evaluate``; or Brax's PPO as MuJoCo
  Playground trains it (``returns.playground_run``), a short real run whose every program
  counts (Brax's train is a Python loop around several jitted programs).
- HLO (``--hlo``, once per row and library, in processes of their own so that dumping does
  not slow the timed ones): the same run with ``XLA_FLAGS=--xla_dump_to=DIR
  --xla_dump_hlo_as_text --xla_dump_hlo_pass_re=^$``; in each ``*after_optimizations.txt``
  (the optimized module; its name is on the ``HloModule`` line), the instructions (lines
  with `` = `` inside a computation, fused computations' bodies included) and the fusions
  among them (`` fusion(`` with ``kind=k``): per program and per role.

Figures per row: medians over ``--repeats`` processes of each leg; the ratios are rollax
over its peer. Rows whose rollax side lacks a package are skipped with the reason; a missing
peer package skips only the peer, and a peer that fails (rejax installed without its
dependencies) leaves its error in the row. The JSON line records the commit and the files
of ``src/`` changed in the work tree: the figures are the work tree's. On a CPU the
Playground row runs both libraries at a shrunk batch (``gpu.TINY``'s, Brax's as
``returns.playground_settings`` shrinks it for a small budget): the same programs at other
shapes; ``--scale full`` runs Playground's published batch (a GPU's). The workers start
with ``XLA_PYTHON_CLIENT_PREALLOCATE=false``: on a GPU the parent may already hold most of
its memory.

Usage:
    python benchmarks/compile.py [--rows ppo sac ...] [--repeats 3] [--tiny] [--no-hlo]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import dataclasses
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import offpolicy
import ppo_cartpole
import returns
from _harness import Parser, banner, emit, ratio

WORKER_TAG = "compile-worker: "
"""The prefix of the one line a worker prints for its parent."""

BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"
CACHE_HITS = "/jax/compilation_cache/cache_hits"

ROLES = {
    "rollax": {"init_global": "training", "run_iterations": "training",
               "run_episodes": "evaluation"},
    "rejax": {"train": "training", "evaluate": "evaluation"},
}  # fmt: skip
"""The role of each large program of rollax and rejax, by function name (others: "other")."""

BRAX_EVALUATION = ("generate_eval_unroll",)
"""Brax's evaluation programs (``brax.training.acting.Evaluator``); its others train."""

EVAL_EPISODES = 32
"""Episodes of each final evaluation (``RunConfig.eval_episodes``'s default; rejax's
evaluator compiles for as many)."""


# ---------------------------------------------------------------------------- rows


def _ppo_cartpole(small: bool) -> Any:
    return ppo_cartpole.rollax_config(100_000)


def _preset(algo: str, env: str, **changes: Any) -> Callable[[bool], Any]:
    """A row's rollax configuration: ``algo``'s preset for ``env``, with ``changes``."""

    def config(small: bool) -> Any:
        from rollax.runs import get_algorithm

        return get_algorithm(algo).config_for(env).replace(**changes)

    return config


def _offpolicy(algo: str, **changes: Any) -> Callable[[bool], Any]:
    """offpolicy.py's rollax configuration of ``algo`` (its preset at the task's budget)."""
    return lambda small: offpolicy.rollax_config(algo).replace(**changes)


def _minatar_blines(small: bool) -> Any:
    """gymnax-blines' MinAtar PPO settings (``returns.REJAX_MINATAR``, rejax's names) in
    rollax's: relu 256x256 on the flattened board (rejax's MLP flattens it), a constant
    learning rate (rejax's, and blines')."""
    from rollax.agents.ppo import PPOConfig

    settings = dict(returns.REJAX_MINATAR)
    network = settings.pop("agent_kwargs")
    return PPOConfig(
        **settings, hidden_sizes=network["hidden_layer_sizes"], activation=network["activation"],
        lr_schedule="constant", image_encoder="flatten", total_steps=returns.MINATAR_BUDGET,
    )  # fmt: skip


def _playground(small: bool) -> Any:
    """gpu.py's PPO on CartpoleBalance: its preset at Playground's published batch (2,048
    environments x 480 steps, 16 epochs of 32 minibatches), or ``gpu.TINY``'s batch."""
    import gpu

    return gpu.playground_ppo(gpu.TINY if small else gpu.Sizes(), "CartpoleBalance")


@dataclasses.dataclass(frozen=True)
class Row:
    """One program pair: rollax's agent on a task and its peer's at the same settings."""

    name: str
    """The row's name (``--rows``)."""
    algo: str
    """rollax's registered algorithm."""
    env: str
    """rollax's environment id."""
    config: Callable[[bool], Any]
    """``small -> config``: rollax's configuration (``small``: a CPU's batch, where the
    published one is a GPU's). Its budget is replaced by a few iterations."""
    needs: tuple[str, ...] = ()
    """Packages rollax's side needs beyond rollax (the row is skipped without them)."""
    peer: str = ""
    """``"rejax"``, ``"brax"`` or ``""`` (no peer: rollax's figure is the reference)."""
    peer_algo: str = ""
    """rejax's algorithm (``"ppo"``, ``"dqn"``...)."""
    peer_env: str = ""
    """The peer's id of the task (gymnax's)."""
    peer_settings: dict | None = None
    """rejax's settings (``_peers.rejax_agent``)."""
    peer_total: int = 0
    """rejax's budget (its programs' loops run a number of iterations fixed by it)."""
    note: str = ""
    """What the reader must know of the pair."""

    @property
    def peer_needs(self) -> tuple[str, ...]:
        """Packages the peer needs."""
        return {"rejax": ("rejax", "gymnax"), "brax": ("brax", "mujoco_playground")}.get(
            self.peer, ()
        )


def _rejax_row(name: str, algo: str, config: Callable[[bool], Any], note: str = "") -> Row:
    """A row of offpolicy.py's tasks: rollax's configuration against rejax's ``algo``."""
    task = offpolicy.TASKS[algo]
    return Row(name, algo, task["env"], config, peer="rejax", peer_algo=algo,
               peer_env=task["env"], peer_settings=task["rejax"], peer_total=task["total"],
               note=note or f"offpolicy.py's {algo.upper()} settings")  # fmt: skip


ROWS = (
    Row("ppo", "ppo", "CartPole-v1", _ppo_cartpole, peer="rejax", peer_algo="ppo",
        peer_env="CartPole-v1",
        peer_settings={"agent_kwargs": ppo_cartpole.REJAX_NETWORK, **ppo_cartpole.SETTINGS},
        peer_total=100_000, note="ppo_cartpole.py's settings (rejax's own for CartPole)"),
    Row("ppo_gru", "ppo", "StatelessCartPole-v1", _preset("ppo", "StatelessCartPole-v1"),
        note="the GRU preset (64 environments x 32 steps, GRU of 64); rejax has no "
             "recurrent PPO"),
    _rejax_row("pqn", "pqn", _offpolicy("pqn")),
    _rejax_row("dqn_per", "dqn", _offpolicy("dqn", prioritized=True),
               note="rollax's DQN with prioritized replay against rejax's plain DQN (rejax "
                    "has no prioritized replay); otherwise offpolicy.py's settings"),
    _rejax_row("sac", "sac", _offpolicy("sac")),
    _rejax_row("td3", "td3", _offpolicy("td3")),
    Row("ppo_minatar", "ppo", "gymnax/Breakout-MinAtar", _minatar_blines, needs=("gymnax",),
        peer="rejax", peer_algo="ppo", peer_env="Breakout-MinAtar",
        peer_settings=returns.REJAX_MINATAR, peer_total=returns.MINATAR_BUDGET,
        note="gymnax-blines' settings on both sides (returns.REJAX_MINATAR; rollax's own "
             "preset is 128x128 with a clipped value and an annealed rate)"),
    Row("ppo_pixels", "ppo", "PixelCartPole-v1", _preset("ppo", "PixelCartPole-v1"),
        note="the pixel preset (pixels.py, gpu.py's pixels section)"),
    Row("ppo_playground", "ppo", "playground/CartpoleBalance", _playground,
        needs=("mujoco_playground",), peer="brax",
        note="gpu.py's playground_ppo against Brax's PPO with Playground's settings "
             "(returns.playground_run)"),
    Row("ppo_craftax", "ppo", returns.CRAFTAX, _preset("ppo", returns.CRAFTAX),
        needs=("craftax",), note="the Craftax-Classic preset (gpu.py's craftax section)"),
)  # fmt: skip
ROW_NAMES = tuple(row.name for row in ROWS)


def missing(packages: tuple[str, ...]) -> list[str]:
    """The packages of ``packages`` this interpreter cannot import."""
    return [p for p in packages if importlib.util.find_spec(p) is None]


# ---------------------------------------------------------------------------- worker


def is_small(fun_name: str) -> bool:
    """Whether a compiled program is one of JAX's own operations run eagerly: its function
    (``jit(NAME)``) is a name of ``jax.lax``, ``jax.numpy``, ``jax.random`` or ``jax.nn``,
    or a private function of JAX's own modules (``_threefry_split``, ``_uniform``). Not
    ``jit(_fun)``: on this JAX every ``pmap``'d program (Brax's training steps) is named
    after pmap's inner wrapper, a nested function, and counts as large."""
    import jax

    name = bare(fun_name)
    spaces = (jax.lax, jax.numpy, jax.random, jax.nn)
    return name in jax_private_functions() or any(hasattr(space, name) for space in spaces)


def jax_private_functions() -> frozenset[str]:
    """The private module-level functions of the JAX modules loaded (``jax._src...``)."""
    names: set[str] = set()
    for module_name, module in list(sys.modules.items()):
        if module_name.startswith("jax._src") and module is not None:
            names.update(k for k, v in vars(module).items() if k.startswith("_") and callable(v))
    return frozenset(names)


def bare(fun_name: str) -> str:
    """``jit(run_iterations)`` (an event's name) or ``jit_run_iterations`` (an HLO module's)
    as ``run_iterations``."""
    for prefix, suffix in (("jit(", ")"), ("jit_", "")):
        if fun_name.startswith(prefix) and fun_name.endswith(suffix):
            return fun_name[len(prefix) : len(fun_name) - len(suffix)]
    return fun_name


def role(lib: str, fun_name: str) -> str:
    """``"small"``, ``"training"``, ``"evaluation"`` or ``"other"`` (large, unknown)."""
    if is_small(fun_name):
        return "small"
    name = bare(fun_name)
    if lib == "brax":
        return "evaluation" if name in BRAX_EVALUATION else "training"
    return ROLES.get(lib.split("-")[0], {}).get(name, "other")


class Events:
    """The compile events of this process, from ``jax.monitoring``'s listeners: each backend
    compilation (name, seconds, seconds since ``start`` at its end) and persistent-cache hits.
    """

    def __init__(self) -> None:
        import jax.monitoring

        self.start = time.perf_counter()
        self.compiles: list[tuple[str, float, float]] = []
        self.cache_hits = 0
        jax.monitoring.register_event_duration_secs_listener(self._duration)
        jax.monitoring.register_event_listener(self._event)

    def _duration(self, event: str, seconds: float, **kwargs: Any) -> None:
        if event == BACKEND_COMPILE:
            end = time.perf_counter() - self.start
            self.compiles.append((str(kwargs.get("fun_name")), float(seconds), end))

    def _event(self, event: str, **kwargs: Any) -> None:
        if event == CACHE_HITS:
            self.cache_hits += 1


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """``concurrent.futures.ThreadPoolExecutor`` held to one worker within the block, so that
    ``Agent.warmup`` compiles its programs one after another."""
    pool = concurrent.futures.ThreadPoolExecutor

    class OneWorker(pool):
        def __init__(self, max_workers: int | None = None, *args: Any, **kwargs: Any) -> None:
            super().__init__(1, *args, **kwargs)

    concurrent.futures.ThreadPoolExecutor = OneWorker  # type: ignore[misc]
    try:
        yield
    finally:
        concurrent.futures.ThreadPoolExecutor = pool  # type: ignore[misc]


def rollax_config(row: Row, small: bool, iterations: int) -> Any:
    """The row's rollax configuration for ``iterations`` iterations."""
    config = row.config(small)
    return config.replace(total_steps=iterations * config.steps_per_iteration)


def rollax_run(row: Row, small: bool, iterations: int, episodes: int, events: Events) -> dict:
    """The real ``rollax.runs.train`` of the row's configuration, no persistent cache."""
    from rollax.runs import RunConfig, train

    config = rollax_config(row, small, iterations)
    with tempfile.TemporaryDirectory(prefix="rollax-compile-") as tmp:
        run_config = RunConfig(env=row.env, run_dir=f"{tmp}/run", progress=False,
                               compilation_cache=False, eval_episodes=episodes)  # fmt: skip
        start = time.perf_counter()
        train(config, run_config)
    return {"start": start, "wall_s": time.perf_counter() - start}


def rollax_sequential(
    row: Row, small: bool, iterations: int, episodes: int, events: Events
) -> dict:
    """The agent ``train`` builds and its ``warmup``, exactly as ``train`` calls it (the same
    evaluations, the environment's default params), one program at a time."""
    from rollax.runs import RunConfig, get_algorithm
    from rollax.runs._run import evaluations  # what train passes to warmup

    config = rollax_config(row, small, iterations)
    start = time.perf_counter()
    agent = get_algorithm(row.algo).make(config, row.env)
    with one_thread():
        agent.warmup(evaluations(RunConfig(eval_episodes=episodes)), agent.env.default_params)
    return {"start": start, "wall_s": time.perf_counter() - start}


def rejax_compile(row: Row, small: bool, iterations: int, episodes: int, events: Events) -> dict:
    """rejax's ``train`` (its evaluation off) and its evaluator, compiled ahead of time."""
    import jax
    import rejax  # noqa: F401  (imported before the clock starts, as rollax is)

    from _peers import rejax_agent, rejax_evaluator

    start = time.perf_counter()
    agent = rejax_agent(row.peer_algo, row.peer_env, row.peer_settings, row.peer_total)
    key = jax.random.key(0)
    jax.jit(agent.train).lower(key).compile()
    run = rejax_evaluator(agent, episodes)

    def evaluate(ts: Any, key: jax.Array) -> jax.Array:
        return run(ts, key)

    ts = jax.eval_shape(agent.init_state, key)
    jax.jit(evaluate).lower(ts, key).compile()
    return {"start": start, "wall_s": time.perf_counter() - start}


def brax_run(row: Row, small: bool, iterations: int, episodes: int, events: Events) -> dict:
    """Brax's PPO as Playground trains CartpoleBalance: a short real run (one seed; the
    published batch, or the shrunk one of a small budget) with its final evaluation."""
    import brax.training.agents.ppo.train  # noqa: F401  (before the clock starts)
    import mujoco_playground  # noqa: F401

    settings = returns.playground_settings("CartpoleBalance", "ppo", 10**9)
    published = (settings["batch_size"] * settings["num_minibatches"]
                 * settings["unroll_length"] * settings["action_repeat"])  # fmt: skip
    budget = 1_024 if small else iterations * published
    task = returns.Row(returns.PLAYGROUND_CARTPOLE, "playground", "CartpoleBalance", {}, budget)
    start = time.perf_counter()
    report = returns.playground_run(task, budget, 1, episodes)
    return {"start": start, "wall_s": time.perf_counter() - start, "steps": report["steps"]}


LEGS: dict[str, Callable[..., dict]] = {
    "rollax": rollax_run,
    "rollax-sequential": rollax_sequential,
    "rejax": rejax_compile,
    "brax": brax_run,
}
"""What a worker runs for each ``--lib``."""


def hlo_sizes(directory: Path) -> list[dict[str, Any]]:
    """Each optimized module dumped in ``directory``: its name, instructions and fusions."""
    out = []
    for path in sorted(directory.glob("*after_optimizations.txt")):
        lines = path.read_text().splitlines()
        name = lines[0].split()[1].rstrip(",") if lines and lines[0].startswith("HloModule") \
            else path.name.split(".")[1]  # fmt: skip
        ops = fusions = 0
        inside = False
        for line in lines:
            if not inside:
                inside = line.endswith("{") and not line.startswith((" ", "HloModule"))
                continue
            if line.startswith("}"):
                inside = False
            elif " = " in line:
                ops += 1
                fusions += " fusion(" in line and "kind=k" in line
        out.append({"name": name, "ops": ops, "fusions": fusions})
    return out


def worker(args: argparse.Namespace) -> None:
    """One leg of one row in this fresh process: print its events as one JSON line."""
    import jax

    row = {r.name: r for r in ROWS}[args.worker]
    if jax.config.jax_compilation_cache_dir is not None:  # the cold start this measures
        jax.config.update("jax_compilation_cache_dir", None)
    events = Events()
    out: dict[str, Any] = {"row": row.name, "lib": args.lib, "backend": jax.default_backend()}
    out.update(LEGS[args.lib](row, args.small, args.iterations, args.episodes, events))
    start = out.pop("start") - events.start
    ends = [at for name, _, at in events.compiles if role(args.lib, name) != "small"]
    out["warmup_wall_s"] = max(ends, default=start) - start
    out["cache_hits"] = events.cache_hits
    out["compiles"] = [[name, seconds, role(args.lib, name)]
                       for name, seconds, _ in events.compiles]  # fmt: skip
    if args.dump:
        out["hlo"] = [{**m, "role": role(args.lib, m["name"])} for m in hlo_sizes(args.dump)]
    print(WORKER_TAG + json.dumps(out), flush=True)


# ---------------------------------------------------------------------------- parent


def run_worker(
    row: str, lib: str, small: bool, iterations: int, episodes: int, dump: bool, timeout: float
) -> dict[str, Any]:
    """Run one leg in a fresh process of this interpreter; its JSON line, or its error."""
    env = dict(os.environ)
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    env["JAX_ENABLE_COMPILATION_CACHE"] = "false"
    env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", row, "--lib", lib,
               "--iterations", str(iterations), "--episodes", str(episodes)]  # fmt: skip
    command += ["--small"] if small else []
    with tempfile.TemporaryDirectory(prefix="rollax-hlo-") as tmp:
        if dump:
            flags = f"--xla_dump_to={tmp} --xla_dump_hlo_as_text --xla_dump_hlo_pass_re=^$"
            env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} {flags}".strip()
            command += ["--dump", tmp]
        try:
            done = subprocess.run(command, env=env, capture_output=True, text=True,
                                  timeout=timeout)  # fmt: skip
        except subprocess.TimeoutExpired:
            return {"error": f"timed out after {timeout:.0f} s"}
    for line in reversed(done.stdout.splitlines()):
        if line.startswith(WORKER_TAG):
            return json.loads(line[len(WORKER_TAG) :])
    tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
    return {"error": f"exit {done.returncode}: {tail}"}


def summary(leg: dict[str, Any]) -> dict[str, Any]:
    """One worker's figures: seconds and counts of its compiled programs by role, and each
    large program's seconds (summed over programs of one name)."""
    compiles = leg["compiles"]
    seconds = lambda *roles: sum(s for _, s, r in compiles if r in roles)  # noqa: E731
    per_program: dict[str, float] = {}
    counts: dict[str, int] = {}
    for name, s, r in compiles:
        if r != "small":
            per_program[name] = per_program.get(name, 0.0) + s
            counts[name] = counts.get(name, 0) + 1
    return {
        "compile_s": seconds("small", "training", "evaluation", "other"),
        "large_s": seconds("training", "evaluation", "other"),
        "training_s": seconds("training"),
        "evaluation_s": seconds("evaluation"),
        "small_s": seconds("small"),
        "programs": len(compiles),
        "large": sum(r != "small" for _, _, r in compiles),
        "small": sum(r == "small" for _, _, r in compiles),
        "per_program_s": per_program,
        "per_program_count": counts,
        "cache_hits": leg["cache_hits"],
        "wall_s": leg.get("wall_s"),
        "warmup_wall_s": leg.get("warmup_wall_s"),
    }


def medians(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The median of each figure of ``summary``'s over repeats (per program too)."""
    out: dict[str, Any] = {}
    for key, value in runs[0].items():
        if isinstance(value, dict):
            out[key] = {k: statistics.median(r[key].get(k, 0) for r in runs) for k in value}
        elif value is not None:
            out[key] = statistics.median(r[key] for r in runs)
    out["cache_hits"] = max(r["cache_hits"] for r in runs)
    return out


def hlo_summary(modules: list[dict[str, Any]]) -> dict[str, Any]:
    """Instructions and fusions per large program (summed over modules of one name) and per
    role."""
    programs: dict[str, dict[str, int]] = {}
    by_role: dict[str, dict[str, int]] = {}
    for m in modules:
        for table, key in ((programs, m["name"]), (by_role, m["role"])):
            if m["role"] == "small" and table is programs:
                continue
            entry = table.setdefault(key, {"modules": 0, "ops": 0, "fusions": 0})
            entry["modules"] += 1
            entry["ops"] += m["ops"]
            entry["fusions"] += m["fusions"]
    return {"programs": programs, "roles": by_role}


def measure_row(
    row: Row, repeats: int, hlo: bool, small: bool, iterations: int, episodes: int,
    timeout: float,
) -> dict[str, Any]:  # fmt: skip
    """Every leg of ``row``: ``repeats`` fresh processes each (interleaved), the HLO once."""
    libs = ["rollax", "rollax-sequential"]
    out: dict[str, Any] = {"env": row.env, "algo": row.algo, "peer": row.peer or None,
                           "note": row.note, "small": small}  # fmt: skip
    lacking = missing(row.peer_needs)
    if row.peer and lacking:
        out["peer_skipped"] = f"missing {', '.join(lacking)}"
    elif row.peer:
        libs.append(row.peer)
    legs: dict[str, list[dict]] = {lib: [] for lib in libs}
    for _ in range(repeats):
        for lib in libs:
            leg = run_worker(row.name, lib, small, iterations, episodes, False, timeout)
            if "error" in leg:
                out[f"{lib}_error"] = leg["error"]
                print(f"  {row.name} {lib}: {leg['error']}", flush=True)
                continue
            legs[lib].append(summary(leg))
    for lib, runs in legs.items():
        if runs:
            out[lib] = medians(runs)
            out[lib]["repeats"] = runs
    if hlo:
        for lib in libs:
            if lib == "rollax-sequential" or lib not in out:
                continue
            leg = run_worker(row.name, lib, small, iterations, episodes, True, timeout)
            if "error" in leg:
                out[f"{lib}_hlo_error"] = leg["error"]
            else:
                out[lib]["hlo"] = hlo_summary(leg["hlo"])
    out["ratios"] = ratios(out)
    return out


def ratios(out: dict[str, Any]) -> dict[str, float | None]:
    """rollax over its peer: compile seconds of the training programs (rollax's compiled
    alone), with the evaluation programs too, and the whole runs' events summed; HLO
    instructions of the training programs."""
    peer = out.get(out["peer"] or "")
    sequential = out.get("rollax-sequential")
    run = out.get("rollax")
    if not peer:
        return {}
    result = {"compile_training": None, "compile_with_evaluation": None, "run_events": None}
    if sequential:
        result["compile_training"] = ratio(sequential["training_s"], peer["training_s"])
        result["compile_with_evaluation"] = ratio(
            sequential["training_s"] + sequential["evaluation_s"],
            peer["training_s"] + peer["evaluation_s"],
        )
    if run:
        result["run_events"] = ratio(run["compile_s"], peer["compile_s"])
        if "hlo" in run and "hlo" in peer:
            mine, theirs = run["hlo"]["roles"], peer["hlo"]["roles"]
            ops = lambda roles, r: roles.get(r, {}).get("ops")  # noqa: E731
            result["hlo_ops_training"] = ratio(ops(mine, "training"), ops(theirs, "training"))
    return result


def measure(
    rows: list[str], repeats: int, hlo: bool, small: bool, iterations: int = 2,
    episodes: int = EVAL_EPISODES, timeout: float = 1_800.0,
) -> dict[str, Any]:  # fmt: skip
    """Every row of ``rows`` (names of :data:`ROWS`) in fresh processes; prints each row's
    table as it finishes. What ``gpu.py``'s compile section calls."""
    results: dict[str, Any] = {}
    skipped: dict[str, str] = {}
    for row in ROWS:
        if row.name not in rows:
            continue
        lacking = missing(("rollax", *row.needs))
        if lacking:
            skipped[row.name] = f"missing {', '.join(lacking)}"
            print(f"{row.name}: skipped, {skipped[row.name]}", flush=True)
            continue
        start = time.perf_counter()
        results[row.name] = measure_row(row, repeats, hlo, small, iterations, episodes, timeout)
        results[row.name]["row_s"] = time.perf_counter() - start
        print_row(row.name, results[row.name])
    return {"rows": results, "skipped": skipped, "repeats": repeats, "hlo": hlo,
            "small": small, "iterations": iterations, "episodes": episodes}  # fmt: skip


# ---------------------------------------------------------------------------- table


def _num(value: Any, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}" if isinstance(value, float) \
        else str(value)  # fmt: skip


def print_row(name: str, r: dict[str, Any]) -> None:
    """One row's table: seconds of each leg, programs, HLO sizes, ratios."""
    run, seq, peer = r.get("rollax"), r.get("rollax-sequential"), r.get(r["peer"] or "")
    peer_name = r["peer"] or "no peer"
    print(f"\n## {name}: {r['algo']} on {r['env']} ({peer_name}; {r['note']})")
    if "peer_skipped" in r:
        print(f"   peer skipped: {r['peer_skipped']}")
    print(f"   {'figure':44s} {'rollax':>10s} {'peer':>10s} {'ratio':>7s}")

    def line(label: str, mine: Any, theirs: Any, digits: int = 2) -> None:
        both = isinstance(mine, float | int) and isinstance(theirs, float | int)
        rate = ratio(float(mine), float(theirs)) if both else None
        print(f"   {label:44s} {_num(mine, digits):>10s} {_num(theirs, digits):>10s} "
              f"{_num(rate):>7s}")  # fmt: skip

    get = lambda leg, key: None if leg is None else leg.get(key)  # noqa: E731
    line("compile s, training (rollax alone, seq.)", get(seq, "training_s"),
         get(peer, "training_s"))  # fmt: skip
    line("compile s, evaluation (rollax alone)", get(seq, "evaluation_s"),
         get(peer, "evaluation_s"))  # fmt: skip
    seq_all = None if seq is None else seq["training_s"] + seq["evaluation_s"]
    peer_all = None if peer is None else peer["training_s"] + peer["evaluation_s"]
    line("compile s, training + evaluation", seq_all, peer_all)
    line("run: compile events summed, s", get(run, "compile_s"), get(peer, "compile_s"))
    line("run: large programs summed, s", get(run, "large_s"), get(peer, "large_s"))
    line("sequential: warmup wall s (tracing incl.)", get(seq, "wall_s"), None)
    line("run: wall s to end of last large compile", get(run, "warmup_wall_s"),
         get(peer, "warmup_wall_s"))  # fmt: skip
    line("run: wall s, whole leg", get(run, "wall_s"), get(peer, "wall_s"))
    line("programs compiled (run)", get(run, "programs"), get(peer, "programs"))
    split = lambda leg: "-" if leg is None else f"{leg['large']}/{leg['small']}"  # noqa: E731
    line("  large / small", split(run), split(peer))
    for role_name in ("training", "evaluation", "small"):
        mine = None if run is None or "hlo" not in run else run["hlo"]["roles"].get(role_name)
        theirs = None if peer is None or "hlo" not in peer else peer["hlo"]["roles"].get(role_name)
        line(f"HLO ops, {role_name}", get(mine, "ops"), get(theirs, "ops"), 0)
        line(f"HLO fusions, {role_name}", get(mine, "fusions"), get(theirs, "fusions"), 0)
    for leg_name, leg in (("rollax seq.", seq), ("rollax run", run), ("peer", peer)):
        if leg is None:
            continue
        parts = [f"{p} {s:.2f}s" for p, s in leg["per_program_s"].items()]
        print(f"   {leg_name} per program: {', '.join(parts)}")
        if leg is not seq and "hlo" in leg:
            sizes = [f"{p} {v['ops']} ops/{v['fusions']} fusions ({v['modules']})"
                     for p, v in leg["hlo"]["programs"].items()]  # fmt: skip
            print(f"   {leg_name} HLO: {', '.join(sizes)}")
    if any(leg is not None and leg["cache_hits"] for leg in (run, seq, peer)):
        print("   WARNING: persistent compilation cache hits: the figures are not cold")
    for key, value in r.items():
        if key.endswith("error"):
            print(f"   {key}: {value}")
    print(f"   ratios: {json.dumps({k: v for k, v in r['ratios'].items()})}", flush=True)


# ---------------------------------------------------------------------------- main


def source_state() -> dict[str, Any]:
    """The commit measured and the files of ``src/`` changed in the work tree (figures of
    a work tree in flux belong to it, not to the commit)."""
    root = Path(__file__).resolve().parent.parent

    def git(*args: str) -> str:
        try:
            done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
        except OSError:
            return ""
        return done.stdout.rstrip()

    changed = git("status", "--porcelain", "--", "src")
    return {"commit": git("rev-parse", "HEAD").strip(),
            "src_changed": [line[3:] for line in changed.splitlines()]}  # fmt: skip


def main() -> None:
    parser = Parser(__doc__).choice("--rows", ROW_NAMES)
    parser.repeats(3, help="fresh processes per leg (medians)").tiny(
        help="1 repeat, 1 iteration, 4 evaluation episodes, a CPU's batch: a rehearsal"
    )
    parser.add_argument("--hlo", action=argparse.BooleanOptionalAction, default=True,
                        help="count each side's optimized HLO (extra processes)")  # fmt: skip
    parser.add_argument("--scale", choices=("auto", "small", "full"), default="auto",
                        help="Playground's batch: shrunk (small), published (full), or "
                             "shrunk on a CPU only (auto)")  # fmt: skip
    parser.add_argument("--iterations", type=int, default=2, help="rollax's run, iterations")
    parser.add_argument("--timeout", type=float, default=1_800.0, help="seconds per worker")
    parser.add_argument("--worker", choices=ROW_NAMES, help=argparse.SUPPRESS)
    parser.add_argument("--lib", choices=tuple(LEGS), help=argparse.SUPPRESS)
    parser.add_argument("--small", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--episodes", type=int, default=EVAL_EPISODES, help=argparse.SUPPRESS)
    parser.add_argument("--dump", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    import jax

    banner(
        "each figure from fresh processes, no persistent cache; rejax's environments adapted "
        "to gymnax 1.0's 6-value step"
    )
    if args.tiny:
        args.repeats, args.iterations, args.episodes = 1, 1, 4
    small = args.tiny or args.scale == "small" or (
        args.scale == "auto" and jax.default_backend() == "cpu"
    )  # fmt: skip
    start = time.perf_counter()
    report = measure(args.rows, args.repeats, args.hlo, small, args.iterations, args.episodes,
                     args.timeout)  # fmt: skip
    emit({"args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
          "jax": jax.__version__, "backend": jax.default_backend(),
          "python": sys.version.split()[0], "source": source_state(),
          "total_s": time.perf_counter() - start, **report})  # fmt: skip


if __name__ == "__main__":
    main()
