"""A griffe extension: Sphinx roles in docstrings become mkdocstrings cross-references.

netstack's docstrings name other objects the Sphinx way — ``:func:`open_lab```,
``:class:`~netstack.host.Lab```, ``:mod:`.demo``` — hundreds of times. The API
reference is built by mkdocstrings, which reads Markdown, so this extension
(listed under the python handler's ``extensions`` in ``mkdocs.yml``) rewrites
each role, once the package is loaded, into an autorefs reference::

    :func:`open_lab`  ->  <autoref identifier="netstack.host.lab.open_lab" optional>
                          <code>open_lab</code></autoref>

The target is resolved the way Sphinx would: a dotted path as it is, a bare
name in the scope of the object whose docstring it is (its module's imports
and members, then its parents'), a leading dot relative to the current
module's package. ``~`` shows only the last component; ``title <target>``
shows the title. The reference is *optional*: a target the reference does not
render (a private helper, a module left out of ``api.md``) shows as code
instead of failing the strict build; a rendered one becomes a link.
``tests/test_docs.py`` checks the built page: links, and no role left.
"""

from __future__ import annotations

import html
import re
from typing import Any

import griffe

ROLE = re.compile(
    r":(?:py:)?(?P<role>func|class|meth|mod|data|attr|exc|obj|const|type)"
    r":`(?P<body>[^`]+)`"
)


def _resolve(obj: griffe.Object, target: str) -> str | None:
    """The full path of *target* seen from *obj*'s docstring, or None."""
    collection = obj.modules_collection
    candidates: list[str] = []
    if target.startswith("."):
        module = obj.module
        base = module.path if module.is_package else (module.parent or module).path
        candidates += [base + target, module.path + target]
    else:
        head, _, rest = target.partition(".")
        scope: griffe.Object | None = obj
        while scope is not None:  # a bare name: the object, then its parents' scopes
            try:
                resolved = scope.resolve(head)
            except griffe.NameResolutionError:
                scope = scope.parent
                continue
            candidates.append(resolved + ("." + rest if rest else ""))
            break
        candidates.append(target)
    for path in candidates:
        try:
            found = collection.get_member(path)
        except (KeyError, ValueError, griffe.AliasResolutionError, griffe.CyclicAliasError):
            continue
        if found is not None:
            return path
    return None


def convert(text: str, obj: griffe.Object) -> str:
    """*text* with its Sphinx roles replaced by optional autorefs references."""

    def sub(m: re.Match[str]) -> str:
        body = m["body"].strip()
        explicit = re.fullmatch(r"(?P<title>.+?)\s*<(?P<target>[^>]+)>", body)
        if explicit:
            title, target = explicit["title"], explicit["target"]
        else:
            target = body.lstrip("~")
            title = target.rsplit(".", 1)[-1] if body.startswith("~") else target.lstrip(".")
        if m["role"] in ("func", "meth") and not title.endswith(")"):
            title += "()"
        code = f"<code>{html.escape(title)}</code>"
        path = _resolve(obj, target.lstrip("~"))
        if path is None:
            return code
        return f'<autoref identifier="{html.escape(path)}" optional>{code}</autoref>'

    return ROLE.sub(sub, text)


class SphinxRoles(griffe.Extension):
    """Rewrite the roles of every docstring of the loaded packages."""

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        self._walk(pkg)

    def _walk(self, obj: griffe.Object) -> None:
        if obj.docstring is not None and ":" in obj.docstring.value:
            obj.docstring.value = convert(obj.docstring.value, obj)
        for member in obj.members.values():
            if not member.is_alias and isinstance(member, griffe.Object):
                self._walk(member)
