"""The published figures cannot drift from the code: the patch-based inference table of
docs/patches.md and the README's headline rows are exactly what scripts/patch_table.py renders
from tests/golden/patch_figures.json, and the shared models' rows of that file are what
`memfold plan` gives today (the zoo MobileNets' rows, 15-18 s of planning each, are pinned by the
C++ PatchBest tests' bounds and re-measured by `make patch-table`)."""
import json
import os
import sys

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import patch_table  # noqa: E402 (the script that writes the figures)

MEMFOLD = os.environ.get("MEMFOLD_BINARY", "memfold")
with open(patch_table.GOLDEN) as _f:
    FIGURES = json.load(_f)


PARTS = [(path, name, renderer) for path, parts in sorted(patch_table.DOCUMENTS.items())
         for name, renderer in parts]


@pytest.mark.parametrize("path,name,renderer", PARTS, ids=[f"{p}:{n}" for p, n, _ in PARTS])
def test_documents_carry_the_rendered_figures(path, name, renderer):
    with open(os.path.join(ROOT, path)) as f:
        text = f.read()
    assert patch_table.between(text, name) == renderer(FIGURES), (
        f"{path} is stale: run scripts/patch_table.py --render (or make patch-table)")


SHARED_ROWS = [(key, source) for key, _, source in patch_table.MODELS
               if source.startswith("shared:")]


@pytest.mark.parametrize("key,source", SHARED_ROWS, ids=[k for k, _ in SHARED_ROWS])
def test_shared_model_rows_are_what_memfold_plans_today(key, source):
    measured = patch_table.measure_row(MEMFOLD, source)
    expected = dict(FIGURES[key])
    measured.pop("seconds")
    expected.pop("seconds")
    assert measured == expected
