"""The HTML report in a real headless chromium (Debian's, through Playwright; no browser is downloaded).

Skipped with a reason when Playwright or /usr/bin/chromium is absent (``.ci/run`` installs both).
Run as a script to take the README's screenshot: ``python tests/test_report_browser.py REPORT.html OUT.png``.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import build
from kernelscope.model import Frame, Profile
from kernelscope.render.report import write_report
from kernelscope.render.report.html import render_html
from kernelscope.render.report.payload import build_payload

CHROMIUM = os.environ.get("KERNELSCOPE_CHROMIUM", "/usr/bin/chromium")
HOSTILE_KERNEL = "</script><img src=x onerror=alert(1)>"
LONG_NAME = "L" * 10_000

pytestmark = pytest.mark.browser


def launch(pw: Any) -> Any:
    return pw.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox"])


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright's Python package is not installed")
    if not (os.path.exists(CHROMIUM) or shutil.which(CHROMIUM)):
        pytest.skip(f"no chromium at {CHROMIUM} (apt-get install chromium)")
    with sync_api.sync_playwright() as pw:
        b = launch(pw)
        yield b
        b.close()


class Page:
    """A page with every console error, page error, dialog and non-file request recorded."""

    def __init__(self, browser: Any, path: Path, hash_: str = "") -> None:
        self.problems: list[str] = []
        self.page = browser.new_page(viewport={"width": 1200, "height": 800})
        p = self.page
        p.on("console", lambda m: self.problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
        p.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        p.on("dialog", lambda d: (self.problems.append(f"dialog: {d.message}"), d.dismiss()))
        p.on("request", lambda r: None if r.url.startswith("file:") else self.problems.append(f"request {r.url}"))
        p.goto(path.as_uri() + hash_)
        p.wait_for_selector("body[data-ready='1']", timeout=20_000)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.page, name)

    def click_frame(self, label: str) -> None:
        """Click the icicle rectangle of the first node labelled ``label``."""
        box = self.page.evaluate(
            """(label) => { const ic = ksApp.icicle;
                 for (const [d, row] of ic.rows.entries()) for (const r of row || [])
                   if (ic.tree.label(r.node) === label) return {x: r.x + Math.min(r.w / 2, 20), y: d * 18 + 9 - ic.wrap.scrollTop};
                 return null; }""",
            label,
        )
        assert box is not None, f"{label} is not drawn"
        self.page.locator("#ks-icicle").click(position=box)


def sample_profile() -> Profile:
    line = Frame.python("train.py", 3, "forward")
    fc = Frame.module_("fc", "Linear")
    return build(
        [
            (
                [line, fc, Frame.op("aten::addmm"), Frame.kernel("sm90_gemm", "cuda:0", 7)],
                {"time_ns": 6e6, "count": 2, "flops": 4e12, "bytes": 8e6},
            ),
            ([line, fc, Frame.op("aten::addmm")], {"cpu_time_ns": 1e5, "count": 2}),
            (
                [line, Frame.op("aten::add"), Frame.kernel(HOSTILE_KERNEL, "cuda:0", 7)],
                {"time_ns": 3e6, "count": 1, "bytes": 1e6},
            ),
            (
                [Frame.python("train.py", 9, "step"), Frame.scope(LONG_NAME), Frame.kernel("copy", "cuda:0", 7)],
                {"time_ns": 1e6, "count": 1},
            ),
        ],
        {"command": ["python", "train.py"], "host": "box"},
    )


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report") / "report.html"
    write_report(sample_profile(), out)
    return out


def test_names_are_dom_text_and_hostile_names_stay_text(browser: Any, report: Path) -> None:
    page = Page(browser, report)
    table = page.inner_text("#ks-table tbody")
    for name in ("aten::addmm", "sm90_gemm", HOSTILE_KERNEL, "train.py:3 forward", "fc (Linear)"):
        assert name in table
    assert page.locator("img").count() == 0
    assert page.evaluate("document.title").startswith("kernelscope report: python train.py")
    assert "box" in page.inner_text("#ks-header")
    # the 10,000-character frame is text in the DOM (a title attribute holds it whole, up to 2,000 chars)
    assert page.evaluate(
        "[...document.querySelectorAll('#ks-table td')].some(td => td.textContent.startsWith('[LLLL'))"
    )
    assert page.problems == []


def test_focus_breadcrumb_reset_and_hash(browser: Any, report: Path) -> None:
    page = Page(browser, report)
    page.click_frame("fc (Linear)")
    crumbs = page.inner_text("#ks-crumbs")
    assert "train.py:3 forward" in crumbs and "fc (Linear)" in crumbs
    url = page.url
    assert "focus=" in url
    again = Page(browser, report, "#" + url.split("#", 1)[1])  # the focus survives a reload from the URL
    assert "fc (Linear)" in again.inner_text("#ks-crumbs")
    again.click("#ks-reset")
    assert again.inner_text("#ks-crumbs").strip() == "all"
    assert page.problems == [] and again.problems == []


def test_a_stale_hash_falls_back(browser: Any, report: Path) -> None:
    page = Page(browser, report, "#tab=nope&metric=gone&group=nothing&mode=x&focus=999.1&q=(")
    assert page.input_value("#ks-metric") == "time_ns" and page.input_value("#ks-group") == "frame"
    assert "sm90_gemm" in page.inner_text("#ks-table tbody")
    assert page.problems == []


def test_search_highlights_and_gives_the_share(browser: Any, report: Path) -> None:
    page = Page(browser, report)
    page.fill("#ks-search", "gemm|img")
    # sm90_gemm 6 ms and the hostile kernel 3 ms of 10 ms
    assert page.inner_text("#ks-search-info") == "2 matching frames, 90.0% of time_ns"
    page.fill("#ks-search", "([")  # a bad regex is flagged, not thrown
    assert page.evaluate("document.getElementById('ks-search').classList.contains('ks-bad')")
    assert page.problems == []


def test_metric_switch_and_table_sort(browser: Any, report: Path) -> None:
    page = Page(browser, report)
    page.select_option("#ks-metric", "count")
    assert page.get_attribute("#ks-table th[data-col=count]", "aria-sort") == "descending"
    page.select_option("#ks-metric", "TFLOP/s")
    first = page.inner_text("#ks-table tbody tr:first-child td:first-child")
    assert first in ("sm90_gemm", "aten::addmm", "fc (Linear)")  # 4e12 FLOP in 6 ms: 666.67 TFLOP/s
    assert "667" in page.inner_text("#ks-table tbody tr:first-child")
    page.click("#ks-table th[data-col=name]")
    names = page.eval_on_selector_all("#ks-table tbody tr td:first-child", "tds => tds.map(t => t.textContent)")
    assert names == sorted(names, reverse=True)
    page.select_option("#ks-group", "op")
    assert page.inner_text("#ks-table thead").startswith("op")
    assert "aten::addmm" in page.inner_text("#ks-table tbody")
    assert page.problems == []


def test_views_switch(browser: Any, report: Path) -> None:
    page = Page(browser, report)
    page.click("#ks-tabs button[data-tab=bottomup]")
    assert "sm90_gemm" in page.inner_text("#ks-bottomup")
    page.click("#ks-bottomup li div >> text=sm90_gemm")
    assert "aten::addmm" in page.inner_text("#ks-bottomup")  # its caller
    page.click("#ks-tabs button[data-tab=flame]")
    page.click_frame("fc (Linear)")
    page.click("#ks-tabs button[data-tab=sandwich]")
    assert "fc (Linear)" in page.inner_text("#ks-callers")
    page.click("#ks-callees li div")
    assert "aten::addmm" in page.inner_text("#ks-callees")
    page.click("#ks-tabs button[data-tab=findings]")
    page.click("#ks-tabs button[data-tab=info]")
    assert '"host": "box"' in page.inner_text("#ks-meta")
    page.click("#ks-tabs button[data-tab=flame]")
    page.click("#ks-fold-modules")
    assert "kernel" in page.url  # hidden kinds are in the hash
    assert "fc (Linear)" in page.inner_text("#ks-table tbody") and "sm90_gemm" not in page.inner_text("#ks-table tbody")
    assert page.problems == []


def test_deep_stack_loads(browser: Any, tmp_path: Path) -> None:
    frames = [Frame.python("deep.py", i + 1, f"f{i}") for i in range(5000)]
    out = tmp_path / "deep.html"
    write_report(build([(frames, {"time_ns": 1.0})]), out)
    page = Page(browser, out)
    assert page.evaluate("ksApp.icicle.rows.length") == 5001
    page.evaluate("ksApp.icicle.wrap.scrollTop = 1e9")
    assert page.problems == []


def test_compressed_data_loads(browser: Any, tmp_path: Path) -> None:
    out = tmp_path / "packed.html"
    out.write_text(render_html(build_payload(sample_profile()), compress_above=0))
    assert 'data-encoding="gzip+base64"' in out.read_text()
    page = Page(browser, out)
    assert "sm90_gemm" in page.inner_text("#ks-table tbody")
    assert page.problems == []


def screenshot(report: Path, png: Path) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = launch(pw)
        page = b.new_page(viewport={"width": 1280, "height": 900})
        page.goto(report.resolve().as_uri())
        page.wait_for_selector("body[data-ready='1']", timeout=20_000)
        page.screenshot(path=str(png))
        b.close()


if __name__ == "__main__":
    screenshot(Path(sys.argv[1]), Path(sys.argv[2]))


def test_timeline_lanes_and_a_selected_range(browser: Any, tmp_path: Path) -> None:
    from kernelscope.model import Category, ProfileBuilder, TimelineBuilder

    b, tl = ProfileBuilder(), TimelineBuilder()
    thread, stream = tl.track("thread 1", "cpu", "thread"), tl.track("stream 7", "cuda:0", "stream")
    op = b.path([Frame.op("aten::mm")])
    k = b.child(op, Frame.kernel("early_kernel", "cuda:0", 7))
    late = b.child(op, Frame.kernel("late_kernel", "cuda:0", 7))
    b.add(k, "time_ns", 1000)
    b.add(late, "time_ns", 1000)
    tl.add(op, thread, 0, 10_000, Category.OP)
    tl.add(op, thread, 500, 100, Category.RUNTIME, correlation=1)
    tl.add(k, stream, 1_000, 1_000, Category.KERNEL, correlation=1)
    tl.add(late, stream, 9_000, 1_000, Category.KERNEL, correlation=2)
    out = tmp_path / "tl.html"
    write_report(b.build({}, tl.build()), out)
    page = Page(browser, out)
    page.click("#ks-tabs button[data-tab=timeline]")
    assert "cuda:0 stream 7" in page.inner_text(".ks-lane-names")
    assert page.evaluate("ksApp.lanes.flowsDrawn") == 1  # the early kernel's launch; the late one has none
    box = page.locator("#ks-lanes-canvas").bounding_box()
    page.mouse.move(box["x"] + 2, box["y"] + 5)  # drag over the first half: the early kernel only
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + 5)
    page.mouse.up()
    picked = page.inner_text("#ks-range")
    assert "early_kernel" in picked and "late_kernel" not in picked
    page.click("#ks-range button")
    assert page.inner_text("#ks-search-info") == "1 selected frames, 100.0% of time_ns"  # mm holds both
    assert page.evaluate("ksApp.pick.map(n => ksApp.tree.label(n)).sort()") == ["aten::mm", "early_kernel"]
    assert "GPU breakdown" in page.evaluate("document.getElementById('ks-timeline').innerText")
    assert page.problems == []


def test_dark_mode_follows_the_system(browser: Any, report: Path) -> None:
    colors = {}
    for scheme in ("light", "dark"):
        page = browser.new_page(color_scheme=scheme)
        page.goto(report.as_uri())
        page.wait_for_selector("body[data-ready='1']")
        colors[scheme] = page.evaluate("getComputedStyle(document.body).backgroundColor")
        page.close()
    assert colors == {"light": "rgb(255, 255, 255)", "dark": "rgb(13, 17, 23)"}


@pytest.mark.traces
def test_real_trace_report_has_no_errors(browser: Any, shared_traces: Path, tmp_path: Path) -> None:
    from kernelscope.analysis.views import group
    from kernelscope.inputs import open_profile

    out = tmp_path / "alexnet.html"
    profile = open_profile(str(shared_traces / "hta_a100_alexnet_cuda_sync.json.gz"))
    write_report(profile, out)
    page = Page(browser, out)
    assert "ampere_sgemm_32x32_sliced1x4_tn" in page.inner_text("#ks-table tbody")
    for by in ("op", "kernel"):  # the page's grouped table gives the numbers of `view --by`
        page.select_option("#ks-group", by)
        got = page.evaluate("ksApp.views.tableRows().map(r => [r.key, r.values.time_ns, r.values.count])")
        want = group(profile, by, ["time_ns", "count"]).rows
        expected = {k if k is not None else f"(no {by})": (v["time_ns"], v["count"] or None) for k, v in want}
        # rows with neither time nor calls (host-only time) are compared by the columns they have
        shown = {k: (t or 0, c or None) for k, t, c in got if t or c}
        assert shown == {k: v for k, v in expected.items() if v[0] or v[1]}
    for tab in ("bottomup", "timeline", "source", "findings", "info", "flame"):
        page.click(f"#ks-tabs button[data-tab={tab}]")
    assert "stream 7" in page.inner_text(".ks-lane-names")
    tl = profile.timeline
    assert tl is not None
    wall_ms = float(tl.span_ns() or 0) / 1e6  # (ops, runtime calls and device work)
    assert f"wall time (timeline){wall_ms:.0f} ms" in page.inner_text("#ks-facts").replace("\n", "")
    assert page.problems == []


def test_empty_and_metric_less_profiles_load(browser: Any, tmp_path: Path) -> None:
    for i, profile in enumerate([build([]), build([([Frame.op("aten::relu")], {"cpu_time_ns": 0.0})])]):
        out = tmp_path / f"empty{i}.html"
        write_report(profile, out)
        page = Page(browser, out)
        for tab in ("bottomup", "sandwich", "source", "findings", "info", "flame"):
            page.click(f"#ks-tabs button[data-tab={tab}]")
        page.fill("#ks-search", "relu")
        assert page.problems == []
