"""Griffe extension for the API reference (mkdocs.yml, ``mkdocstrings`` handler option ``extensions``).

The docstrings are Google-style sections with reST inline markup, which Markdown does not read: ``code`` is already
Markdown code, but a role (``:class:`~otel_eval.x.Y```, ``:meth:`Y.z```, ``:mod:`otel_eval.x```) would show as
text, and a literal block introduced by ``::`` would keep both colons. This turns each role into an optional
cross-reference (a link where the reference renders the target, plain code elsewhere: no broken link, no warning)
and ``::`` before a literal block into ``:``.
"""

from __future__ import annotations

import html
import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(?:class|meth|func|mod|attr|data|exc|obj):`(~?)([^`<>]+?)`")
_LITERAL_BLOCK = re.compile(r"::\n(\s*\n)")


def _reference(match: re.Match[str], owner: griffe.Object) -> str:
    short, target = match.group(1) == "~", match.group(2).strip()
    title = target.rsplit(".", 1)[-1] if short else target
    if target.startswith("."):  # relative to the owner's module (``:mod:`.service```)
        target = owner.module.path + target
    elif "." not in target or not target.startswith("otel_eval"):
        # A name relative to the owner (a sibling class, a method of it): resolved as Python would find it there.
        parent = owner if owner.is_class or owner.is_module else owner.parent
        head = target.split(".", 1)[0]
        while parent is not None and head not in parent.members:
            parent = parent.parent
        target = f"{parent.path}.{target}" if parent is not None else target
    identifier = html.escape(target, quote=True)
    return f'<autoref identifier="{identifier}" optional><code>{html.escape(title)}</code></autoref>'


class ReSTRoles(griffe.Extension):
    """Rewrites the reST roles and literal-block markers of every docstring as Markdown the reference renders."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Called by griffe for each object it loads."""
        docstring = obj.docstring
        if docstring is None:
            return
        value = _ROLE.sub(lambda match: _reference(match, obj), docstring.value)
        docstring.value = _LITERAL_BLOCK.sub(r":\n\1", value)
