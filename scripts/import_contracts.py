"""import-linter contract types of our own (registered in pyproject.toml).

``acyclic_siblings_at_runtime``: import-linter's ``acyclic_siblings`` checked on
the graph of the imports that run — those under ``if TYPE_CHECKING:`` left out.
A module may name a sibling's class in its annotations whichever way the
runtime imports go (``from __future__ import annotations`` makes that free);
what must not loop is the order in which modules import each other when the
program runs, because a loop there is what forces the function-level and
bottom-of-module imports that hide a module's dependencies. import-linter only
excludes TYPE_CHECKING imports for a whole session (``exclude_type_checking_imports``),
which would also let the layers contract accept an upward import under
TYPE_CHECKING; so this contract builds its own runtime graph (grimp caches it)
and leaves the session's graph, and the layers contract, as they are.

Function-level imports count: grimp sees them, and a cycle closed by one is a
runtime cycle as soon as the function runs. The cycles that exist are listed
in the contract's ``ignore_imports`` as documented exceptions, so the check
fails on any new one (and, unmatched ignores being errors, on an exception
that no longer exists: delete its line when you break a cycle).

Run with ``lint-imports`` from the repository root (import-linter puts the
working directory on ``sys.path``, so ``scripts.import_contracts`` imports).
"""

from __future__ import annotations

import grimp
from importlinter.contracts.acyclic_siblings import AcyclicSiblingsContract
from importlinter.domain.contract import ContractCheck

__all__ = ["RuntimeAcyclicSiblingsContract"]


class RuntimeAcyclicSiblingsContract(AcyclicSiblingsContract):
    """``acyclic_siblings`` over the imports that execute (no TYPE_CHECKING imports)."""

    type_name = "acyclic_siblings_at_runtime"

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        roots = self.session_options["root_packages"]
        external = str(self.session_options.get("include_external_packages")) in ("True", "true")
        runtime = grimp.build_graph(
            *roots, include_external_packages=external, exclude_type_checking_imports=True
        )
        return super().check(runtime, verbose)
