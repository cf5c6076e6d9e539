"""Regenerate the generated parts of docs/commands.md and docs/labs.md.

The command reference lists the shell's command table
(:func:`netstack.cli.experiment.shell_commands`), the lab-file reference the
schema (:data:`netstack.labs.labfile.SCHEMA`): each page keeps its prose and
has one generated block between ``<!-- generated: NAME -->`` and
``<!-- end generated -->``.

python scripts/gen_docs_ref.py          # rewrite the blocks
python scripts/gen_docs_ref.py --check  # exit 1 if a block is out of date
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from netstack.cli.experiment import shell_commands  # noqa: E402
from netstack.labs.labfile import SCHEMA  # noqa: E402

TABLES = {
    "": "top level",
    "lab": "`[lab]`",
    "host": "`[hosts.NAME]`",
    "link": "`[[links]]`",
    "capture": "`[[captures]]`",
}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def commands_block() -> str:
    out = ["| command | on | Linux tool | what it does |", "|---|---|---|---|"]
    for cmd in shell_commands():
        note = "" if cmd.available else f" *(not available yet: {cmd.missing})*"
        where = "a host" if cmd.scope == "host" else "the shell"
        linux = cmd.linux or "—"
        out.append(
            f"| [`{cmd.name}`](#{cmd.name}) | {where} | {linux} | {_cell(cmd.summary)}{note} |"
        )
    out.append("")
    for cmd in shell_commands():
        out += [f"### {cmd.name}", "", _cell(cmd.summary) + ".", ""]
        if cmd.usage:
            out += ["```text", cmd.usage.strip("\n"), "```", ""]
    return "\n".join(out)


def labs_block() -> str:
    out: list[str] = []
    for table, title in TABLES.items():
        out += [
            f"### {title}",
            "",
            "| key | type | required | meaning | example |",
            "|---|---|---|---|---|",
        ]
        for key in SCHEMA[table]:
            types = " or ".join(
                {"str": "string", "int": "integer", "float": "float", "bool": "boolean",
                 "list": "array", "dict": "table"}[t.__name__] for t in key.types
            )  # fmt: skip
            example = f"`{key.name} = {key.example}`" if key.example else ""
            req = "yes" if key.required else ""
            out.append(f"| `{key.name}` | {types} | {req} | {_cell(key.doc)} | {_cell(example)} |")
        out.append("")
    return "\n".join(out)


BLOCKS = {"commands": (ROOT / "docs" / "commands.md", commands_block),
          "labs": (ROOT / "docs" / "labs.md", labs_block)}  # fmt: skip


def render(text: str, name: str, body: str) -> str:
    pattern = re.compile(rf"(<!-- generated: {name} -->\n).*?(<!-- end generated -->)", re.DOTALL)
    if not pattern.search(text):
        raise SystemExit(f"no '<!-- generated: {name} -->' block")
    return pattern.sub(lambda m: m.group(1) + body + "\n" + m.group(2), text)


def main(argv: list[str]) -> int:
    stale = []
    for name, (path, make) in BLOCKS.items():
        text = path.read_text(encoding="utf-8")
        new = render(text, name, make())
        if new != text:
            stale.append(path.name)
            if "--check" not in argv:
                path.write_text(new, encoding="utf-8")
    if stale and "--check" in argv:
        print(f"out of date: {', '.join(stale)} (run python scripts/gen_docs_ref.py)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
