"""The report's Ranks view of a whole job: payload (store and merged profile) and the page in chromium.

A 4-rank job is synthesised from a real rank trace by benchmarks/synth_job.py (a planted straggler and a
planted slow collective), imported as a store (2 local Dask workers) and as one merged profile.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernelscope.cli.main import main
from kernelscope.cli.report import _open
from kernelscope.model import load
from kernelscope.render.report.payload import build_payload
from test_report_browser import Page, browser, sample_profile

REPO = Path(__file__).resolve().parents[1]
BASE = REPO.parent / "shared" / "traces" / "tracelens_b200_vllm_tp8_rank0_compiled_nccl.json.gz"
RANKS = 4
STRAGGLER = 3
LATE_RANK = 1

pytestmark = pytest.mark.traces
__all__ = ["browser"]  # the chromium fixture, shared with test_report_browser


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    if not BASE.exists():
        pytest.skip("../shared/traces is absent")
    pytest.importorskip("duckdb", reason="the store extra is not installed")
    spec = importlib.util.spec_from_file_location("synth_job", REPO / "benchmarks" / "synth_job.py")
    assert spec is not None and spec.loader is not None
    synth = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(synth)
    root = tmp_path_factory.mktemp("ranksjob")
    truth = synth.synthesise(
        str(BASE),
        str(root / "ranks"),
        ranks=RANKS,
        straggler=STRAGGLER,
        slowdown=1.5,
        slow_collective=30,
        late_rank=LATE_RANK,
        late_ms=5.0,
        jitter_us=20.0,
    )
    store = root / "store"
    assert main(["import", str(root / "ranks"), "--store", str(store), "--workers", "2"]) == 0
    merged = root / "merged.ksprof"
    assert main(["import", str(root / "ranks"), "-o", str(merged)]) == 0
    return {"truth": truth, "store": store, "merged": merged, "root": root}


def _rounded(value: Any) -> Any:
    """The payload rounds floats to 6 decimals; compare at 3."""
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return round(value, 3) if isinstance(value, float) else value


def test_store_report_carries_what_ranks_prints(job: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    # given the job's store
    capsys.readouterr()
    assert main(["ranks", str(job["store"]), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    # when its report payload is built
    payload = build_payload(_open(str(job["store"])), sources=False)
    ranks = payload["ranks"]
    # then the Ranks view holds the store's analysis, the one `kernelscope ranks` prints
    assert payload["ranks_error"] is None
    assert _rounded(ranks) == _rounded(printed)
    assert ranks["straggler"]["rank"] == STRAGGLER
    assert ranks["top_skew"][0]["last_rank"] == LATE_RANK
    heat = ranks["heatmap"]["line"]
    assert heat["ranks"] == list(range(RANKS))
    assert len(heat["rows"]) == RANKS and all(len(r) == len(heat["keys"]) for r in heat["rows"])
    # and the advisor's findings agree with the view about the straggler
    assert any(f["rule"] == "straggler" and f"rank {STRAGGLER}" in f["title"] for f in payload["findings"])


def test_merged_profile_report_has_the_view_and_one_rank_has_none(job: dict[str, Any]) -> None:
    payload = build_payload(load(str(job["merged"])), sources=False)
    assert payload["ranks"]["straggler"]["rank"] == STRAGGLER
    assert payload["ranks"]["heatmap"]["module"]["ranks"] == list(range(RANKS))
    assert build_payload(sample_profile(), sources=False)["ranks"] is None


@pytest.mark.browser
def test_ranks_tab_heatmap_and_straggler_in_chromium(browser: Any, job: dict[str, Any]) -> None:
    # given the report of the store
    out = job["root"] / "report.html"
    assert main(["report", str(job["store"]), "-o", str(out)]) == 0
    page = Page(browser, out)
    assert f"{RANKS} ranks" in page.locator("#ks-facts").inner_text()
    # when the Ranks tab is opened
    page.locator("#ks-tabs button[data-tab='ranks']").click()
    page.wait_for_selector("#ks-heatmap")
    # then the heatmap has one cell per rank and top line, the straggler's row is marked
    keys = page.locator("#ks-heatmap thead th").count() - 1
    assert keys >= 1
    assert page.locator("#ks-heatmap tbody tr").count() == RANKS
    assert page.locator("#ks-heatmap td.ks-heat-cell").count() == RANKS * keys
    marked = page.locator("#ks-heatmap tr.ks-straggler")
    assert marked.count() == 1 and marked.get_attribute("data-rank") == str(STRAGGLER)
    assert "straggler" in marked.locator("td").first.inner_text()
    assert page.locator("#ks-straggler").get_attribute("data-rank") == str(STRAGGLER)
    # the straggler's cell at the slowed line is coloured red (above the median rank)
    line = job["truth"]["straggler"]["line"]
    colour = marked.locator(f"td.ks-heat-cell[data-key='{line}']").evaluate("e => e.style.background")
    assert colour.startswith("rgba(209, 36, 47")
    # the skew table puts the planted slow collective first, with its late rank
    first = page.locator("#ks-skew tbody tr").first.locator("td")
    assert first.nth(5).inner_text() == f"rank {LATE_RANK}"
    # switching to modules redraws the heatmap; the tab survives a reload through the hash
    page.locator("#ks-heat-by").select_option("module")
    assert page.locator("#ks-heatmap").get_attribute("data-by") == "module"
    assert "tab=ranks" in page.url
    page.reload()
    page.wait_for_selector("body[data-ready='1']")
    assert page.locator("#view-ranks").is_visible()
    assert page.problems == []
    page.close()


@pytest.mark.browser
def test_no_ranks_tab_for_one_rank(browser: Any, tmp_path: Path) -> None:
    from kernelscope.render.report import write_report

    out = tmp_path / "one.html"
    write_report(sample_profile(), out)
    page = Page(browser, out, "#tab=ranks")
    assert page.locator("#ks-tabs button[data-tab='ranks']").count() == 0
    assert page.locator("#view-flame").is_visible()  # a stale hash falls back
    assert page.problems == []
    page.close()
