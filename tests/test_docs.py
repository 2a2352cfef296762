"""The documentation: the site builds with --strict, and every published example runs.

- ``mkdocs build --strict`` fails on a broken link, anchor or API reference, a page missing
  from the navigation, or a docstring that names an object that does not exist.
- Every public module of rollax appears in the API reference (docs/api/).
- Every ```` ```python ```` block of README.md and docs/*.md runs: the blocks of one page in
  order, in one namespace, in a fresh Python process started in an empty directory (as a
  user who copies them would), with warnings as errors. A block that starts with
  ``# requires: rollax[EXTRA]`` is skipped only when that extra is not installed, and the
  test says so. Shell commands are ```` ```bash ```` blocks and do not run.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from _extras import EXTRAS, absent_modules

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.processes  # every page's Python blocks run in a fresh process
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

# Brax, jaxopt, MuJoCo and tfp announce their own deprecations; they are not rollax's to fix
# (as in tests/test_brax_adapter.py). Every other warning fails the page.
THIRD_PARTY_WARNINGS = [
    "ignore:Brax System:UserWarning",
    "ignore:JAXopt is no longer maintained:DeprecationWarning",
    "ignore:Accessing `ncon`:DeprecationWarning",
    # tfp-nightly's JAX backend, which SBX imports.
    "ignore:jax.core.pytype_aval_mappings is deprecated:DeprecationWarning",
]
_FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_REQUIRES = re.compile(r"^# requires: (.*)$", re.MULTILINE)
_EXTRA = re.compile(r"rollax\[(\w+)\]")

# Runs the blocks it reads from stdin in one namespace. Each block is compiled under its
# page's path, shifted to its line there, so a traceback points at the Markdown source.
_RUNNER = """
import json, sys
namespace = {"__name__": "__main__"}
for path, line, code in json.load(sys.stdin):
    exec(compile("\\n" * (line - 1) + code, path, "exec"), namespace)
"""


@dataclasses.dataclass(frozen=True)
class Block:
    """One ```python block of a page: where its code starts and the extras it needs."""

    path: Path
    line: int
    code: str
    extras: tuple[str, ...]

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    def missing_extras(self) -> list[str]:
        return [e for e in self.extras if absent_modules(e)]


def python_blocks(path: Path) -> list[Block]:
    """The ```python blocks of a Markdown file, in order."""
    text = path.read_text()
    blocks = []
    for match in _FENCE.finditer(text):
        line = text.count("\n", 0, match.start(1)) + 1
        code = match.group(1)
        extras: list[str] = []
        for marker in _REQUIRES.findall(code):
            named = _EXTRA.findall(marker)
            unknown = [e for e in named if e not in EXTRAS]
            if not named or unknown:
                raise ValueError(
                    f"{path.name}:{line}: '# requires: {marker}' must name extras as "
                    f"rollax[EXTRA], EXTRA one of {sorted(EXTRAS)}"
                )
            extras += named
        blocks.append(Block(path, line, code, tuple(extras)))
    return blocks


PAGES_WITH_CODE = [p for p in PAGES if python_blocks(p)]


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES_WITH_CODE, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_python_block_of_the_page_runs(page, tmp_path):
    blocks = python_blocks(page)
    run = [b for b in blocks if not b.missing_extras()]
    skipped = [
        f"{b.where} needs rollax[{', '.join(b.missing_extras())}] (not installed)"
        for b in blocks
        if b.missing_extras()
    ]
    # Programs compiled by the examples go to the test run's cache (tests/conftest.py's
    # ROLLAX_CACHE_DIR, which train() enables), never the user's.
    env = dict(os.environ)
    result = subprocess.run(
        [
            sys.executable,
            "-W",
            "error",
            *(arg for f in THIRD_PARTY_WARNINGS for arg in ("-W", f)),
            "-c",
            _RUNNER,
        ],
        input=json.dumps([(str(b.path), b.line, b.code) for b in run]),
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, (
        f"a Python block of {page.name} failed (the traceback names its line):\n"
        f"{result.stdout[-3000:]}\n{result.stderr[-6000:]}"
    )
    if skipped:
        pytest.skip(f"{len(run)} blocks ran; skipped: " + "; ".join(skipped))


@pytest.mark.extra("docs")
def test_the_site_builds_strictly(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-6000:]
    assert (tmp_path / "api" / "envs" / "index.html").is_file()


def _public_modules() -> list[str]:
    """Dotted names of rollax's modules whose path has no private (``_``) component."""
    src = ROOT / "src"
    names = []
    for path in sorted((src / "rollax").rglob("*.py")):
        parts = path.relative_to(src).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if not any(p.startswith("_") for p in parts):
            names.append(".".join(parts))
    return names


def _exported(module: str) -> set[str]:
    """The names in a module's ``__all__`` (read from the source, nothing imported)."""
    path = ROOT / "src" / Path(*module.split("."))
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    found = re.search(r"^__all__[^=]*= \[(.*?)\]", path.read_text(), re.MULTILINE | re.DOTALL)
    return set(re.findall(r"\"(\w+)\"", found.group(1))) if found else set()


def test_every_public_module_is_in_the_api_reference():
    rendered = set()
    for page in (ROOT / "docs" / "api").glob("*.md"):
        rendered |= set(re.findall(r"^::: ([\w.]+)", page.read_text(), re.MULTILINE))
    # The command line is documented by its --help and docs/agents.md.
    missing = []
    for module in _public_modules():
        if module in rendered or module in ("rollax.__main__", "rollax.cli"):
            continue
        # A module whose public names its package re-exports is covered by the package.
        parents = [module.rsplit(".", k)[0] for k in range(1, module.count(".") + 1)]
        if not any(p in rendered and _exported(module) <= _exported(p) for p in parents):
            missing.append(module)
    assert not missing, f"add '::: MODULE' to a page of docs/api/ for {missing}"
