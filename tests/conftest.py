"""Test-wide settings.

- JAX: strict dtype and rank promotion, so that implicit promotions in rollax code fail here
  instead of silently changing dtypes for users.
- Hypothesis: under CI (the ``CI`` environment variable set, as ``.ci/run`` is run), property
  tests draw their examples deterministically, so one commit always runs the same examples;
  local runs keep exploring with fresh ones. A failure found anywhere becomes an explicit
  ``@example`` on the test.
- Compiling: a pytest run keeps JAX's persistent compilation cache in one temporary
  directory, :data:`COMPILATION_CACHE`, shared by its pytest-xdist workers and by the Python
  processes its tests start (``JAX_COMPILATION_CACHE_DIR``, and ``ROLLAX_CACHE_DIR`` for
  rollax's command line). A test building the same
  program as an earlier one on either worker (the same agent and config, made anew; a docs
  page's example that another page runs too; a CLI run) loads it instead of compiling it
  again. A cache hit still counts as a compile for ``jax.monitoring``'s ``backend_compile``
  event, which the compile-once tests count.
- XLA: the suite compiles without XLA's backend optimizations, in pytest and in the
  processes its tests start (``XLA_FLAGS``; tests/_xla.py says why and how to opt out).
- MuJoCo: drawn offscreen (``MUJOCO_GL=egl``) on a machine without a display, as the command
  line does for ``--video`` (``rollax.cli.offscreen_gl_for_mujoco``).
- Test order: modules with a slow test or an ``xdist_group`` run first, so that the two
  workers of ``make test`` do not end with one of them alone on a long test.
- Optional packages: a test (or a module, through ``pytestmark``) that needs one is marked
  ``@pytest.mark.extra("NAME", ...)``, NAME a key of :data:`EXTRAS`. By default a missing
  package fails the test as any import error does. With ``--deselect-missing-extras`` (what
  ``make test-latest`` passes: the newest JAX, beside which some extras cannot install) the
  tests whose extras are not installed are deselected, a module marked as a whole is not
  even imported, and the terminal summary names every deselected test and why.
- CI's legs: a test that starts Python processes of its own is marked ``processes``; the
  fast PPO learning test is marked ``both_legs``. tests/_legs.py says how ``.ci/run`` divides
  the suite between its two legs with them.
"""

from __future__ import annotations

import ast
import atexit
import importlib.util
import json
import os
import shutil
import tempfile
from collections import defaultdict
from pathlib import Path

import jax
import pytest
from hypothesis import settings

import rollax
from _extras import EXTRAS, absent_modules
from _xla import use_suite_flags
from rollax.cli import offscreen_gl_for_mujoco

pytest_plugins = ("_legs",)  # how CI's two legs divide the suite (tests/_legs.py)

# Before the first computation: the suite's XLA flags (tests/_xla.py), and on a jaxlib whose
# CPU scheduler deadlocks (0.10), that scheduler turned off as the command line does
# (rollax.avoid_cpu_scheduler_deadlock; a no-op on later ones).
use_suite_flags()
rollax.avoid_cpu_scheduler_deadlock()

jax.config.update("jax_numpy_dtype_promotion", "strict")
jax.config.update("jax_numpy_rank_promotion", "raise")

_SHARED_CACHE = "ROLLAX_TESTS_JAX_CACHE"  # set by the pytest process whose workers share it
_SHARED = importlib.util.find_spec("filelock") is not None  # JAX locks a sized cache with it


def _compilation_cache() -> str:
    """The persistent compilation cache of this pytest run: made (and removed at exit) by the
    first pytest process, and inherited by pytest-xdist's workers, which it starts after
    importing this file, when JAX can lock it (``filelock``); else one per process."""
    inherited = os.environ.get(_SHARED_CACHE)
    if inherited and _SHARED:
        return inherited
    path = tempfile.mkdtemp(prefix="rollax-tests-jax-cache-")
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    if _SHARED:
        os.environ[_SHARED_CACHE] = path
    return path


COMPILATION_CACHE = _compilation_cache()
"""This pytest run's persistent compilation cache (removed when the run ends)."""
_CACHE_SETTINGS = {
    "jax_compilation_cache_dir": COMPILATION_CACHE,
    "jax_persistent_cache_min_compile_time_secs": 0.5,
    # A size bound is what makes JAX lock the directory around each read and write, so that
    # no process reads an entry another is still writing.
    **({"jax_compilation_cache_max_size": 32 * 2**30} if _SHARED else {}),
}
for _name, _value in _CACHE_SETTINGS.items():
    jax.config.update(_name, _value)
    os.environ[_name.upper()] = str(_value)  # for the processes tests start
# rollax's own runs (`rollax train`, `train()`) point JAX at $ROLLAX_CACHE_DIR: this one too,
# never the user's cache.
os.environ["ROLLAX_CACHE_DIR"] = COMPILATION_CACHE

# MuJoCo opens a window's OpenGL context unless told otherwise when it is imported: draw
# offscreen on a machine without a display, as the command line does for --video.
offscreen_gl_for_mujoco()

# Stable-Baselines3 makes a log folder for every model it builds, in $SB3_LOGDIR if set, else
# a new /tmp/SB3-<time> each: one folder for the run, removed with it.
if "SB3_LOGDIR" not in os.environ:
    os.environ["SB3_LOGDIR"] = tempfile.mkdtemp(prefix="rollax-tests-sb3-")
    atexit.register(shutil.rmtree, os.environ["SB3_LOGDIR"], ignore_errors=True)

settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("dev", print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))

_OPTION = "--deselect-missing-extras"
_RECORDS = pytest.StashKey[list]()  # [nodeid or module path, reason]
_WORKER_KEY = "rollax_deselected_extras"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        _OPTION,
        action="store_true",
        help="deselect the tests marked extra(NAME) whose packages are not installed, and "
        "name them in the summary (without it a missing package fails its tests)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_RECORDS] = []
    # pytest-xdist's --dist loadgroup (make test's) keeps a module whose costly fixture its
    # tests share on one worker. From pytest 9.2 it groups nothing, silently
    # (pytest-xdist#1386): every worker would build each such fixture again.
    pytest_version = tuple(int(p) for p in pytest.__version__.split(".")[:2] if p.isdigit())
    if config.getoption("dist", "no") == "loadgroup" and pytest_version >= (9, 2):
        raise pytest.UsageError(
            f"--dist loadgroup groups nothing on pytest {pytest.__version__} "
            "(pytest-xdist#1386); install the pytest that pyproject.toml's dev extra allows"
        )


def _missing(names: list[str], where: str) -> str:
    """Why ``names`` (extras) cannot run here, or "" when all their modules are importable."""
    reasons = []
    for name in dict.fromkeys(names):
        if name not in EXTRAS:
            raise pytest.UsageError(f"{where}: unknown extra {name!r}; known: {sorted(EXTRAS)}")
        absent = absent_modules(name)
        if absent:
            reasons.append(f"extra '{name}' not installed: {', '.join(absent)}")
    return "; ".join(reasons)


def _module_extras(path: Path) -> list[str]:
    """The extras a test module's top-level ``pytestmark`` names, read without importing it."""
    names: list[str] = []
    for node in ast.parse(path.read_text(), str(path)).body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in targets):
            for call in ast.walk(node.value):
                if isinstance(call, ast.Call) and ast.unparse(call.func) == "pytest.mark.extra":
                    names += [a.value for a in call.args if isinstance(a, ast.Constant)]
    return names


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    # A module marked as a whole may import its extra at the top: it is not imported at all.
    if not config.getoption(_OPTION) or collection_path.suffix != ".py":
        return None
    if not collection_path.name.startswith("test_"):
        return None
    reason = _missing(_module_extras(collection_path), str(collection_path))
    if not reason:
        return None
    where = os.path.relpath(collection_path, config.rootpath)
    config.stash[_RECORDS].append([f"{where} (whole module)", reason])
    return True


@pytest.hookimpl(trylast=True)  # after -m: only tests that would otherwise run are named
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    kept, dropped = [], []
    for item in items:
        names = [name for mark in item.iter_markers("extra") for name in mark.args]
        if any(not mark.args for mark in item.iter_markers("extra")):
            raise pytest.UsageError(f"{item.nodeid}: extra() names no extra")
        reason = _missing(names, item.nodeid)
        if reason and config.getoption(_OPTION):
            dropped.append(item)
            config.stash[_RECORDS].append([item.nodeid, reason])
        else:
            kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = _heavy_modules_first(kept)


def _heavy_modules_first(items: list[pytest.Item]) -> list[pytest.Item]:
    """``items`` with the modules holding a slow or grouped test first, each module's tests
    together and in their order (a module fixture is then built once per worker)."""
    heavy = {
        item.path
        for item in items
        if item.get_closest_marker("slow") or item.get_closest_marker("xdist_group")
    }
    return sorted(items, key=lambda item: item.path not in heavy)


def pytest_sessionfinish(session: pytest.Session) -> None:
    if hasattr(session.config, "workeroutput"):  # a pytest-xdist worker: tell the controller
        session.config.workeroutput[_WORKER_KEY] = json.dumps(session.config.stash[_RECORDS])


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:  # pytest-xdist's controller
    records = node.config.stash[_RECORDS]
    for record in json.loads(getattr(node, "workeroutput", {}).get(_WORKER_KEY, "[]")):
        if record not in records:  # every worker collects (and deselects) the same tests
            records.append(record)


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    if not config.getoption(_OPTION):
        return
    records = config.stash[_RECORDS]
    terminalreporter.section("deselected: extras not installed")
    if not records:
        terminalreporter.write_line("none: every extra a selected test needs is installed")
        return
    by_reason: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for where, reason in records:
        module, _, test = where.partition("::")
        by_reason[reason][module].append(test)
    tests = sum(1 for where, _ in records if "::" in where)
    modules = len(records) - tests
    terminalreporter.write_line(
        f"{tests} tests and {modules} whole modules deselected; their packages are missing:"
    )
    for reason, modules_tests in sorted(by_reason.items()):
        terminalreporter.write_line(f"{reason}:")
        for module, names in sorted(modules_tests.items()):
            names = [n for n in names if n]
            terminalreporter.write_line(
                f"  {module}" + (f" ({len(names)}): {', '.join(names)}" if names else "")
            )


@pytest.fixture
def key() -> jax.Array:
    return jax.random.key(0)
