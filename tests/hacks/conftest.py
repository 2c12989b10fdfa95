"""Each case answers to `-k CHECK` for the checks it expects to fail, beside its id: `-k "precomputed or ghost"`
runs the hack cases those two checks exist for (the ids name the candidate file, not the check)."""

from __future__ import annotations

import pytest


@pytest.hookimpl(tryfirst=True)  # before `-k` deselects: the keywords must be there when it looks
def pytest_collection_modifyitems(items) -> None:
    for item in items:
        callspec = getattr(item, "callspec", None)
        case = callspec.params.get("case") if callspec is not None else None
        for expect in getattr(case, "expect", ()):
            if expect.check:
                item.extra_keyword_matches.add(expect.check)
