"""A Griffe extension: rollax's Sphinx-style roles as links in the API reference.

rollax's docstrings name other objects the way ``help()`` readers and Sphinx know,
``:class:`VecEnv``` or ``:func:`~rollax.envs.make```. mkdocstrings renders Markdown, where such
a role would show as literal text, so this extension rewrites each one into a
cross-reference (``[`VecEnv`][rollax.envs._vec_env.VecEnv]``) once the package is loaded:

- a dotted name (``rollax.envs.make``) is taken as a full path;
- a bare or partly qualified name (``VecEnv``, ``VecEnv.reset``) is resolved in the scope of
  the docstring's object (its members, then its parents', the module's imports included);
- ``~`` shows only the last component.

A name that does not resolve is reported as a warning, and a reference to an object the site
does not show fails the link check: with ``mkdocs build --strict`` both fail the build, so
a docstring that names something that does not exist is caught.

The reStructuredText marker ``::`` that ends a paragraph before an indented code example
becomes ``:`` (the indented block is a code block in Markdown too).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:class|func|meth|data|attr|mod|exc):`(~?)([\w.]+)`")
_LITERAL_BLOCK = re.compile(r"(\S)::(\n\s*\n)")

_logger = griffe.get_logger("griffe_sphinx_roles")


def _target(obj: griffe.Object, name: str) -> str | None:
    """The full path of ``name`` as seen from ``obj``, or None if it names nothing."""
    if name.startswith("rollax."):
        return name
    head, _, rest = name.partition(".")
    try:
        path = obj.resolve(head)
    except griffe.NameResolutionError:
        return None
    return f"{path}.{rest}" if rest else path


def _rewrite(obj: griffe.Object, text: str) -> str:
    """``text`` with every role replaced by a cross-reference (or plain code if unknown)."""

    def link(match: re.Match[str]) -> str:
        short, name = match.group(1), match.group(2)
        shown = name.rsplit(".", 1)[-1] if short else name
        path = _target(obj, name)
        if path is None:
            _logger.warning(f"{obj.path}: {match.group(0)} names nothing in scope")
            return f"`{shown}`"
        return f"[`{shown}`][{path}]"

    return _LITERAL_BLOCK.sub(r"\1:\2", _ROLE.sub(link, text))


def _walk(obj: griffe.Object) -> Any:
    """``obj`` and every object defined inside it (imported aliases left out)."""
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _walk(member)


class SphinxRoles(griffe.Extension):
    """Rewrites Sphinx roles in every docstring of a loaded package."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        """Rewrite the docstrings of ``pkg`` once all of it is loaded (aliases resolvable)."""
        for obj in _walk(pkg):
            if obj.docstring is not None and not obj.is_private:
                obj.docstring.value = _rewrite(obj, obj.docstring.value)
