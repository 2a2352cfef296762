"""How CI's two legs divide the suite between them (a pytest plugin; tests/conftest.py loads it).

``.ci/run`` runs the latest leg first (Python 3.12, the newest JAX; ``make test-latest``)
and the pinned leg second (Python 3.11, constraints.txt; ``make test``). Run whole, both
would pass CI's time limit on a 2-core machine, so in CI each test runs in one leg:

- the latest leg runs the tests that are not ``slow`` and start no Python process of their
  own (not marked ``processes``): the library in one process, on the JAX users install
  today. It records every test that passed (``--record-passed=FILE``);
- the pinned leg runs the rest (``--deselect-passed=FILE``): the slow tests, the tests that
  start processes, and the tests of extras the latest leg could not install. A test marked
  ``both_legs`` runs in both (the fast PPO learning test: learning holds on both releases).

A test may report figures for the leg's log with ``record_property("leg_figures", text)``;
the run's summary prints them, passed or failed (the fast PPO test reports its return and
steps/s, so each leg's log says how PPO fared on that leg's JAX).

Node ids are compared without pytest-xdist's ``@group`` suffix. Run on their own, ``make
test`` and ``make test-latest`` pass neither option and run their whole selections. Give
the FILE after ``=``: pytest reads a path after a space as a test path before it loads this
plugin.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

_RECORD = "--record-passed"
_DESELECT = "--deselect-passed"
_GROUP_SUFFIX = re.compile(r"@[A-Za-z0-9_.-]+$")  # pytest-xdist's loadgroup: "<nodeid>@<group>"


def _bare(nodeid: str) -> str:
    return _GROUP_SUFFIX.sub("", nodeid)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        _RECORD,
        metavar="FILE",
        help="write the node ids of the tests that passed to FILE, one per line",
    )
    parser.addoption(
        _DESELECT,
        metavar="FILE",
        help="deselect the tests FILE lists as passed (another leg's --record-passed), "
        "except those marked both_legs",
    )


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption(_DESELECT)
    if path and not Path(path).is_file():
        raise pytest.UsageError(f"{_DESELECT}: {path!r} is not a file")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    path = config.getoption(_DESELECT)
    if not path:
        return
    passed = set(Path(path).read_text().splitlines())
    kept, dropped = [], []
    for item in items:
        ran = _bare(item.nodeid) in passed and not item.get_closest_marker("both_legs")
        (dropped if ran else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = kept


_passed_reports: list[str] = []  # this process's passed tests (the controller's: all)
_leg_figures: list[str] = []  # the "leg_figures" properties of this process's tests


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when != "call":
        return
    if report.passed:
        _passed_reports.append(_bare(report.nodeid))
    _leg_figures.extend(
        f"{_bare(report.nodeid)}: {value}"
        for name, value in report.user_properties
        if name == "leg_figures"
    )


def pytest_sessionfinish(session: pytest.Session) -> None:
    path = session.config.getoption(_RECORD)
    if path and not hasattr(session.config, "workerinput"):  # not a pytest-xdist worker
        Path(path).write_text("".join(f"{nodeid}\n" for nodeid in sorted(_passed_reports)))


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    if _leg_figures and not hasattr(config, "workerinput"):
        terminalreporter.section("figures of this leg")
        for line in _leg_figures:
            terminalreporter.write_line(line)
    if config.getoption(_RECORD):
        terminalreporter.write_line(
            f"{len(_passed_reports)} passed tests recorded in {config.getoption(_RECORD)}"
        )
    if config.getoption(_DESELECT):
        path = config.getoption(_DESELECT)
        listed = len(Path(path).read_text().splitlines())
        terminalreporter.write_line(
            f"deselected: the {listed} tests that passed in the leg that wrote {path} "
            "(but for those marked both_legs)"
        )
