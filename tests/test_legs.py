"""CI's two legs divide the suite without losing a test (tests/_legs.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest

pytestmark = pytest.mark.processes  # pytest runs in a process of its own

TESTS = """
import pytest

def test_passes():
    pass

def test_fails():
    assert False

@pytest.mark.skip(reason="an extra that is missing")
def test_skipped():
    pass

@pytest.mark.parametrize("name", ["a name with spaces", "plain"])
def test_with_an_id(name):
    pass

@pytest.mark.both_legs
def test_in_both(record_property):
    record_property("leg_figures", "returns 500.0 at 123 steps/s")
"""


def _pytest(tmp_path: Path, *args: str) -> tuple[set[str], str]:
    """Run pytest (two workers) on a module of TESTS with the legs plugin: the tests it ran,
    and what it printed."""
    junit = tmp_path / "junit.xml"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "_legs", "-p", "no:cacheprovider",
         "-o", "markers=both_legs", "-n", "2", "--dist", "loadgroup", f"--junitxml={junit}",
         *args, str(tmp_path / "test_module.py")],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parent)},
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr  # test_fails failed
    ran = {case.get("name") for case in ElementTree.parse(junit).iter("testcase")}
    return ran, done.stdout


def test_the_second_leg_runs_what_the_first_did_not_pass_and_the_tests_of_both(tmp_path):
    (tmp_path / "test_module.py").write_text(TESTS)
    record = tmp_path / "passed.txt"
    first, _ = _pytest(tmp_path, f"--record-passed={record}")
    assert {"test_passes", "test_fails", "test_in_both", "test_skipped"} <= first
    second, _ = _pytest(tmp_path, f"--deselect-passed={record}")
    # What failed or was skipped runs again; what passed does not, spaces in its id or not.
    assert {"test_fails", "test_in_both"} <= second
    assert not {"test_passes", "test_with_an_id[plain]"} & second
    assert "test_with_an_id[a name with spaces]" in first
    assert not any("a name with spaces" in name for name in second)
    assert "test_skipped" in second


def test_a_leg_prints_the_figures_its_tests_report(tmp_path):
    (tmp_path / "test_module.py").write_text(TESTS)
    _, printed = _pytest(tmp_path)
    summary = printed.split("figures of this leg", 1)[1]  # a worker's test, the run's summary
    assert "test_module.py::test_in_both: returns 500.0 at 123 steps/s" in summary
