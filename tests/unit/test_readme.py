"""The README is the front door: short, the commands CI runs, the user's start first, a link to each page
of docs/, and every relative link in it and in docs/ pointing at something that exists."""

from __future__ import annotations

import re
from pathlib import Path

from mcp_memory.cli.settings_table import rows

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md")), ROOT / "prompts" / "README.md"]
LINK = re.compile(r"!?\[(?:[^\]]|\][^(])*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)


def test_readme_names_the_two_commands() -> None:
    text = README.read_text()
    assert "scripts/demo" in text and "scripts/test" in text
    assert "scripts/test" in (README.parent / ".ci" / "run").read_text()


def test_readme_is_a_front_door() -> None:
    """At most 250 lines; a user's install and run come before anything for developers."""
    text = README.read_text()
    assert len(text.splitlines()) <= 250, "README.md is over 250 lines: move the detail into docs/"
    start = text.index("pip install .")
    assert start < text.index("claude_desktop_config.example.json") < text.index("scripts/test")
    assert text.index("<!-- tool-profiles:start -->") < text.index("<!-- tool-profiles:end -->")


def test_readme_links_every_page_of_docs() -> None:
    linked = {target.split("#")[0] for target in _links(README)}
    pages = {f"docs/{page.name}" for page in DOCS.glob("*.md")}
    assert pages <= linked, f"README.md does not link {sorted(pages - linked)}"


def test_every_setting_is_documented_in_docs_configuration() -> None:
    text = (DOCS / "configuration.md").read_text()
    missing = [env for env, _, _ in rows() if f"| `{env}` |" not in text]
    assert not missing, f"docs/configuration.md lacks {missing}: run scripts/update-docs"


def test_every_setting_named_in_the_docs_exists() -> None:
    """A variable named in README.md or docs/ is a setting (or the prefix of a section of them)."""
    settings = {env for env, _, _ in rows()}
    unknown = sorted(
        f"{page.relative_to(ROOT)}: {name}"
        for page in PAGES
        for name in set(re.findall(r"MCP_MEMORY_[A-Z0-9_]*[A-Z0-9]", page.read_text(encoding="utf-8")))
        if name not in settings and not any(env.startswith(name + "_") for env in settings)
    )
    assert not unknown, f"no such setting: {unknown}"


def test_every_relative_link_resolves() -> None:
    """Every relative link of README.md, docs/*.md and prompts/README.md names a file or folder that
    exists, and a `#fragment` into a Markdown page names one of its headings (GitHub's anchors)."""
    broken = []
    for page in PAGES:
        for target in _links(page):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:, ...
                continue
            path, _, fragment = target.partition("#")
            resolved = (page.parent / path).resolve() if path else page
            if not resolved.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif fragment and resolved.suffix == ".md" and fragment not in _anchors(resolved):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_architecture_tree_is_the_package_tree() -> None:
    """Every folder and loose module of mcp_memory/ is in docs/architecture.md's tree, and nothing else is."""
    text = (DOCS / "architecture.md").read_text()
    section = text[text.index("## Layers") :]
    tree = section[section.index("```text") : section.index("```", section.index("```text") + 3)]
    drawn = "\n".join(line.split("#")[0] for line in tree.splitlines())  # the tree, not its comments
    named = set(re.findall(r"\b([a-z_]+)/", drawn)) | set(re.findall(r"\b([a-z_]+)\.py\b", drawn))
    package = ROOT / "mcp_memory"
    folders = {p.parent.name for p in package.rglob("__init__.py") if p.parent != package}
    modules = {p.stem for p in package.glob("*.py") if p.stem not in ("__init__", "__main__")}
    assert named - {"mcp_memory", "scripts"} == folders | modules


def _links(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    text = re.sub(r"`[^`\n]*`", "", text)  # code spans are not links
    return LINK.findall(text)


def _anchors(page: Path) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as hyphens,
    a repeated one numbered -1, -2, ..."""
    seen: dict[str, int] = {}
    anchors = set()
    for line in FENCE.sub("", page.read_text(encoding="utf-8")).splitlines():
        heading = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not heading:
            continue
        slug = re.sub(r"[^\w\- ]", "", heading.group(1).lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors
