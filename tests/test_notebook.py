"""Notebooks: a real notebook (tests/notebooks/train_cell.ipynb) executed by nbclient on an ipykernel:
``%load_ext kernelscope``, a ``%%kernelscope`` cell that trains a small model, a loaded profile that renders
itself, a bad option; then what the cells displayed, opened in chromium (offline: nothing fetched)."""

from __future__ import annotations

import html
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO

NOTEBOOK = REPO / "tests" / "notebooks" / "train_cell.ipynb"
CHROMIUM = os.environ.get("KERNELSCOPE_CHROMIUM", "/usr/bin/chromium")

pytest.importorskip("torch")
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def executed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    tmp = tmp_path_factory.mktemp("notebook")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp)}})
    client.execute()
    return nb, tmp


def outputs(nb: Any, index: int, kind: str) -> list[Any]:
    return [o for o in nb.cells[index].outputs if o.output_type == kind]


def text_of(nb: Any, index: int) -> str:
    return "".join(o.text for o in outputs(nb, index, "stream"))


def visible(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


def test_no_cell_fails(executed: tuple[Any, Path]) -> None:
    nb, _tmp = executed
    assert not [o for c in nb.cells for o in c.get("outputs", []) if o.output_type == "error"]


def test_the_magic_profiles_the_cell_and_shows_tree_and_report(executed: tuple[Any, Path]) -> None:
    nb, tmp = executed
    assert "trained, loss" in text_of(nb, 2)  # the cell's own output
    assert "profile saved to cell.ksprof" in text_of(nb, 2)
    assert (tmp / "cell.ksprof").is_file()
    (shown,) = outputs(nb, 2, "display_data")
    page = shown.data["text/html"]
    tree = visible(re.search(r"<pre.*?</pre>", page, re.S).group(0))  # type: ignore[union-attr]
    assert "program: %%kernelscope --max-overhead 0 -o cell.ksprof" in tree
    assert "100% under a user line" in tree
    # the cell's own line (ipykernel's name for the cell's code) holds the model's modules
    assert re.search(r"ipykernel_\d+/\d+\.py:2", tree), tree
    assert "Sequential" in tree and "(Linear)" in tree
    assert '<iframe class="kernelscope-report" sandbox="allow-scripts" srcdoc="' in page


def test_a_loaded_profile_renders_itself(executed: tuple[Any, Path]) -> None:
    nb, _tmp = executed
    (result,) = outputs(nb, 3, "execute_result")
    assert result.data["text/plain"].startswith("<kernelscope Profile of %%kernelscope")
    assert 'class="kernelscope-tree"' in result.data["text/html"]
    assert "kernelscope-report" in result.data["text/html"]


def test_a_bad_option_is_one_line(executed: tuple[Any, Path]) -> None:
    nb, _tmp = executed
    assert text_of(nb, 4).strip() == "kernelscope: unknown option(s) for %%kernelscope: --no-such-option"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright's Python package is not installed")
    if not (os.path.exists(CHROMIUM) or shutil.which(CHROMIUM)):
        pytest.skip(f"no chromium at {CHROMIUM} (apt-get install chromium)")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox"])
        yield b
        b.close()


@pytest.mark.browser
def test_the_displayed_output_works_in_chromium_offline(executed: tuple[Any, Path], browser: Any) -> None:
    nb, tmp = executed
    (shown,) = outputs(nb, 2, "display_data")
    path = tmp / "cell-output.html"
    path.write_text(f"<!doctype html><html><body>{shown.data['text/html']}</body></html>", encoding="utf-8")
    problems: list[str] = []
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("console", lambda m: problems.append(f"console: {m.text}") if m.type == "error" else None)
    page.on("request", lambda r: None if r.url.startswith(("file:", "about:")) else problems.append(r.url))
    page.goto(path.as_uri())
    assert "Sequential" in page.inner_text("pre.kernelscope-tree")
    frame = page.frame_locator("iframe.kernelscope-report")
    frame.locator("body[data-ready='1']").wait_for(timeout=20_000)
    assert page.locator("iframe.kernelscope-report").bounding_box()["height"] > 300
    assert "Sequential" in frame.locator("body").inner_text()
    assert not problems, problems
    page.close()
