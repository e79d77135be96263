"""The generated parts of docs/ are what the code produces now: docs/configuration.md's settings table and
docs/tools.md's reference (the tools, resources and prompt a client lists). When one fails, run
scripts/update-docs and commit the result."""

from __future__ import annotations

import pytest

from mcp_memory.cli.docs_tables import GENERATED, ROOT, regenerated, with_part


@pytest.fixture(scope="module")
def pages() -> dict[str, str]:
    """Each generated page as the code makes it now (the server is built and listed once)."""
    return regenerated(ROOT)


@pytest.mark.parametrize("page", sorted({part.page for part in GENERATED}))
def test_generated_page_is_current(page: str, pages: dict[str, str]) -> None:
    assert (ROOT / page).read_text(encoding="utf-8") == pages[page], (
        f"{page} is stale: run scripts/update-docs"
    )


def test_a_part_is_replaced_between_its_markers_only() -> None:
    part = GENERATED[0]
    text = f"before\n{part.start}\nold\n{part.end}\nafter\n"
    assert with_part(text, part, "new") == f"before\n{part.start}\nnew\n{part.end}\nafter\n"
    with pytest.raises(ValueError, match="markers"):
        with_part("no markers here", part, "new")
