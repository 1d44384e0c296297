"""The Home page's table of the documentation names every page of the site's navigation (a page added to mkdocs.yml
without its row on the Home page fails here), and the Home page states how long `make test` takes and the fast
subset."""

from __future__ import annotations

import re

import yaml

from tests.docs.recipes import REPO


def _nav_pages(entries: list[object]) -> list[str]:
    pages: list[str] = []
    for entry in entries:
        for value in entry.values() if isinstance(entry, dict) else [entry]:
            pages.extend(_nav_pages(value) if isinstance(value, list) else [str(value)])
    return pages


def test_every_page_of_the_navigation_has_its_row_on_the_home_page() -> None:
    config = yaml.load((REPO / "mkdocs.yml").read_text(encoding="utf-8"), Loader=yaml.BaseLoader)
    pages = [page for page in _nav_pages(config["nav"]) if page != "index.md"]
    assert len(pages) > 15
    home = (REPO / "docs" / "index.md").read_text(encoding="utf-8")
    table = home.split("## The documentation", 1)[1]
    rows = re.findall(r"^\| \[[^\]]+\]\(([^)#]+)\) \| .+ \|$", table, re.MULTILINE)
    missing = [page for page in pages if page not in rows]
    assert not missing, f"docs/index.md's table lacks {missing}"


def test_the_home_page_says_how_long_the_tests_take_and_the_fast_subset() -> None:
    home = (REPO / "docs" / "index.md").read_text(encoding="utf-8")
    assert "past 10 minutes on two cores" in home
    assert 'pytest -m "not integration"' in home
