"""An import-linter contract type that lists what a package MAY import (``allowlist``),
where the built-in ``forbidden`` lists what it may not.

Hand-written because import-linter has no allow-list type: ``forbidden`` needs every
module a package must not reach named in advance, so a new trusted-side module or a new
library is allowed until someone remembers to add it; ``protected`` guards the other
direction (who may import a module). Registered in pyproject.toml's
``contract_types``; used for the sandbox harness, which may import only itself, the
standard library and the numeric libraries the sandbox image installs.

    [[tool.importlinter.contracts]]
    type = "allowlist"
    source_modules = ["judge.harness"]     # these packages, and all below them
    allowed_modules = ["judge"]            # exactly these modules (here: the version)
    allowed_packages = ["jax", "numpy"]    # these packages, and all below them
    allow_standard_library = true
"""

from __future__ import annotations

import sys
from typing import Any

from grimp import ImportGraph
from importlinter import Contract, ContractCheck, fields, output


def _within(module: str, parents: set[str]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in parents)


class AllowListContract(Contract):
    type_name = "allowlist"

    source_modules = fields.SetField(subfield=fields.ModuleField())
    allowed_modules = fields.SetField(subfield=fields.ModuleField(), required=False)
    allowed_packages = fields.SetField(subfield=fields.ModuleField(), required=False)
    allow_standard_library = fields.BooleanField(required=False, default=True)

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        sources = {m.name for m in self._modules("source_modules")}
        exact = {m.name for m in self._modules("allowed_modules")}
        packages = {m.name for m in self._modules("allowed_packages")}
        stdlib = set(sys.stdlib_module_names) if self.allow_standard_library else set()
        importers = {d for s in sources for d in graph.find_descendants(s)} | sources
        broken = []
        for importer in sorted(importers):
            for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                if (_within(imported, sources | packages) or imported in exact
                        or imported.split(".")[0] in stdlib):
                    continue
                lines = sorted({d["line_number"] for d in graph.get_import_details(
                    importer=importer, imported=imported)})
                broken.append({"importer": importer, "imported": imported, "lines": lines})
        return ContractCheck(kept=not broken, metadata={"broken": broken})

    def _modules(self, name: str) -> list[Any]:
        found: list[Any] = list(getattr(self, name) or ())  # the parsed field's Modules
        return found

    def render_broken_contract(self, check: ContractCheck) -> None:
        for row in check.metadata["broken"]:
            where = ", ".join(f"l.{n}" for n in row["lines"])
            output.print_error(f"{row['importer']} -> {row['imported']} ({where}): "
                               "not allowed", bold=False)
            output.new_line()
