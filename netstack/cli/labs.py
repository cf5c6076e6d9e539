"""``netstack run LAB.toml`` and ``netstack check LAB.toml``.

``run`` builds the lab in virtual time, runs its host commands, its steps and
its checks, and prints one line per check and a summary (exit status 0 when
every check passed, 1 when one failed, 2 when the file is wrong or a command
or step failed). ``check`` validates the file — schema, names, links — and
builds it to run the host commands (so a bad ``ip`` command is caught with
its line), without running steps or checks.
"""

from __future__ import annotations

import time
from typing import TextIO

import trio

from netstack.host import open_lab, run
from netstack.labs.labfile import (
    CheckResult,
    LabFileError,
    LabSpec,
    build_lab,
    load_lab,
    run_lab,
    timed_model,
)
from netstack.labs.session import Session

__all__ = ["check_lab_file", "run_lab_file"]


def run_lab_file(
    path: str,
    *,
    out: TextIO,
    err: TextIO,
    verbose: bool = False,
    pcap_dir: str | None = None,
    seed: int | None = None,
) -> int:
    """``netstack run``: build, configure, run steps and checks; 0 if every check passed."""
    wall = time.perf_counter()
    try:
        spec = load_lab(path)
    except LabFileError as e:
        print(e, file=err)
        return 2
    if seed is not None:
        import attrs

        spec = attrs.evolve(spec, seed=seed)

    def say(text: str) -> None:
        print(text, file=out, flush=True)

    async def main() -> int:
        async with (
            open_lab(seed=spec.seed, hz=spec.hz, timed=timed_model(spec)) as lab,
            trio.open_nursery() as nursery,
        ):
            session = Session(lab, nursery, out=say, err=say)
            say(_headline(spec))
            echo = (lambda s: say("  " + s)) if verbose else None
            try:
                await build_lab(spec, lab, session, pcap_dir=pcap_dir, echo=echo)
                if verbose and spec.steps:
                    say("steps:")
                report = await run_lab(
                    spec,
                    session,
                    step_output=echo,
                    on_check=lambda r: say(_check_line(r, verbose)),
                )
            except LabFileError as e:
                print(e, file=err)
                nursery.cancel_scope.cancel()
                return 2
            say(report.summary() + f", {time.perf_counter() - wall:.2f} s of wall time")
            nursery.cancel_scope.cancel()
            return 0 if report.passed else 1

    return run(main)


def _headline(spec: LabSpec) -> str:
    n_h, n_l = len(spec.hosts), len(spec.links)
    head = (
        f"lab {spec.name} ({spec.path}): {n_h} host{'s' * (n_h != 1)}, {n_l} link{'s' * (n_l != 1)}"
    )
    return head + (f"\n  {spec.description}" if spec.description else "")


def _check_line(result: CheckResult, verbose: bool) -> str:
    mark = "PASS" if result.passed else "FAIL"
    text = f"{mark}  {result.line.text}"
    lines = result.output.splitlines()
    if result.passed:
        if lines and len(lines) == 1:
            text = f"{text:<52} {lines[0]}"
        elif verbose and lines:
            text += "\n" + "\n".join("      " + x for x in lines)
        return text
    detail = "\n".join("      " + x for x in lines[-8:])
    where = f"      ({result.line.where}, exit status {result.status})"
    return text + ("\n" + detail if detail else "") + "\n" + where


def check_lab_file(path: str, *, out: TextIO, err: TextIO) -> int:
    """``netstack check``: 0 if the lab file is valid and its commands succeed."""
    try:
        spec = load_lab(path)
    except LabFileError as e:
        print(e, file=err)
        return 2

    async def main() -> int:
        async with (
            open_lab(seed=spec.seed, hz=spec.hz, timed=timed_model(spec)) as lab,
            trio.open_nursery() as nursery,
        ):
            session = Session(lab, nursery)
            try:
                await build_lab(spec, lab, session, captures=False)
            except LabFileError as e:
                print(e, file=err)
                return 2
            finally:
                nursery.cancel_scope.cancel()
            problems = []
            for line in (*spec.steps, *spec.checks):
                problem = _check_line_syntax(session, line.text)
                if problem:
                    problems.append(f"{line.where}: {problem}")
            if problems:
                print("\n".join(problems), file=err)
                return 2
            print(
                f"{spec.path}: OK ({len(spec.hosts)} hosts, {len(spec.links)} links, "
                f"{len(spec.steps)} steps, {len(spec.checks)} checks)",
                file=out,
            )
            return 0

    return run(main)


def _check_line_syntax(session: Session, text: str) -> str | None:
    """Why a step/check line cannot run (unknown host or command), or None."""
    try:
        words = session.split(text)
    except ValueError as e:
        return f"syntax error: {e}"
    words = [w for w in words if w not in ("!", "&")]
    if not words:
        return None
    host, cmd, _argv = session.target(words)
    if cmd is None:
        if host is not None and len(words) == 1:
            return None
        name = words[1] if host is not None and len(words) > 1 else words[0]
        return f"{name}: command not found"
    if cmd.scope == "host" and host is None:
        return f"{cmd.name}: which host? (write 'HOST {cmd.name} …')"
    if not cmd.available:
        return f"{cmd.name}: not available yet in netstack ({cmd.missing})"
    return None
