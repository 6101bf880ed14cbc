"""The HTML report in a real headless Chromium (Playwright), opened from ``file://``.

Needs Chromium and the ``playwright`` Python package (the ``test`` extra); the browser is the
system one (``apt-get install chromium``), never one downloaded by ``playwright install``.
``VERIMOD_CHROMIUM`` names another executable. Without them these tests skip, saying what to
install.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

try:
    from playwright.sync_api import expect
except ImportError:  # the browser fixture skips, saying what to install
    expect = None

from tests.helpers.browser import launch_browser
from tests.report.test_html import big_report_at, mixed_run, payload_run, svg_figure
from verimod.report.html import build_report
from verimod.tasks.varm.codebook import FIELDS
from verimod.tasks.varm.parser import parse_rationale

# Traps installed before the page's own script: any payload that runs sets window.__xss or
# calls alert(); any CSP violation (something the policy had to block) is recorded.
TRAPS = """
window.__xss = 0;
window.__csp = [];
document.addEventListener("securitypolicyviolation", function (e) {
  window.__csp.push(e.violatedDirective + " " + e.blockedURI);
});
"""
# Compares, in the page, what the opened items show with the item data of the JSON block.
CHECK_RENDERED = """
() => {
  const data = JSON.parse(document.getElementById("report-data").textContent);
  const run = data.runs[Number(document.getElementById("run-select").value)];
  const problems = [];
  let checked = 0;
  for (const li of document.querySelectorAll("#item-list > li.item")) {
    const item = run.items[Number(li.dataset.index)];
    if (li.querySelector(".item-id").textContent !== item.id) problems.push("id " + li.dataset.index);
    const detail = li.querySelector(".item-detail");
    if (!detail) continue;
    checked += 1;
    if (detail.querySelector(".text-block").textContent !== item.x) problems.push("input " + item.id);
    const shown = Array.from(detail.querySelector(".rationale").childNodes)
      .filter((n) => !(n.classList && n.classList.contains("verdict")))
      .map((n) => n.textContent).join("");
    if (item.o !== null && shown !== item.o) problems.push("output " + item.id);
    const refs = Array.from(detail.querySelectorAll("td.ref")).map((td) => td.textContent);
    const expected = item.r.map((v) => (v === null ? "(not annotated)" : v));
    if (refs.join("\\u0001") !== expected.join("\\u0001")) problems.push("reference " + item.id);
  }
  const withHandlers = Array.from(document.querySelectorAll("*"))
    .filter((e) => Array.from(e.attributes).some((a) => a.name.toLowerCase().startsWith("on"))).length;
  const foreign = document.querySelectorAll(
    "iframe, object, embed, svg, math, base, video, audio, details, textarea, frame, a[href]:not([href^='#']), " +
    "body script:not(#report-data):not([nonce])"
  ).length;
  return {
    problems, checked, withHandlers, foreign,
    scripts: document.scripts.length,
    images: Array.from(document.images).map((i) => i.src.slice(0, 25)),
    drawn: Array.from(document.images).every((i) => i.complete && i.naturalWidth > 0),
    xss: window.__xss, csp: window.__csp,
  };
}
"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """A headless Chromium, shared by the tests of this module; skips loudly without one."""
    with launch_browser() as launched:
        yield launched


class Page:
    """A page with the traps installed and every dialog, page error and request recorded."""

    def __init__(self, browser: Any, *, bypass_csp: bool = False) -> None:
        self.context = browser.new_context(bypass_csp=bypass_csp, viewport={"width": 1400, "height": 1000})
        self.page = self.context.new_page()
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page.add_init_script(TRAPS)
        self.page.on("dialog", self._dialog)
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.on("console", lambda message: self._console(message))
        self.page.on("request", lambda request: self.requests.append(request.url))

    def _console(self, message: Any) -> None:
        if message.type in ("error", "warning"):
            self.errors.append(f"console {message.type}: {message.text}")

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    def open(self, report: Path) -> Any:
        self.page.goto(report.as_uri())
        self.page.wait_for_selector("body[data-ready=true]", timeout=20_000)
        return self.page

    def assert_quiet(self, report: Path) -> None:
        """No payload ran, nothing was blocked, no script error, nothing fetched."""
        assert self.page.evaluate("window.__xss") == 0
        assert self.dialogs == []
        assert self.page.evaluate("window.__csp") == []
        assert self.errors == []
        foreign = [u for u in self.requests if u != report.as_uri() and not u.startswith("data:")]
        assert foreign == []

    def close(self) -> None:
        self.context.close()


def test_the_traps_catch_a_payload_that_runs(browser, tmp_path):
    """Control: the same traps do fire on a page that does write a payload raw."""
    unsafe = tmp_path / "unsafe.html"
    unsafe.write_text(
        '<!DOCTYPE html><body data-ready="true"><img src=x onerror="window.__xss=1"><script>alert(1)</script>',
        encoding="utf-8",
    )
    view = Page(browser)
    try:
        page = view.open(unsafe)
        page.wait_for_timeout(100)
        assert page.evaluate("window.__xss") == 1
        assert view.dialogs == ["alert: 1"]
    finally:
        view.close()


@pytest.mark.parametrize("bypass_csp", [False, True], ids=["with-csp", "escaping-alone"])
def test_no_payload_runs_anywhere_in_the_page(browser, tmp_path, bypass_csp):
    run, payloads = payload_run()
    report = build_report([run], tmp_path / "payloads.html", figures={"fig <script>": svg_figure()})
    view = Page(browser, bypass_csp=bypass_csp)
    try:
        page = view.open(report)
        page.select_option("#page-size", "200")
        assert page.locator("#item-list > li").count() == len(run.items)
        page.click("#expand-page")
        page.mouse.move(300, 300)
        page.mouse.wheel(0, 4000)
        page.keyboard.press("Tab")
        page.wait_for_timeout(300)
        result = page.evaluate(CHECK_RENDERED)
        assert result["problems"] == []
        assert result["checked"] == len(run.items)
        assert result["withHandlers"] == 0 and result["foreign"] == 0
        assert result["scripts"] == 2
        assert result["images"] == ["data:image/svg+xml;base64"] and result["drawn"]
        # the run's names are shown as text
        assert page.title() == f"verimod report: {run.store.manifest.model} ({run.store.manifest.setting})"
        # searching for a payload filters as text, and shows it as text
        page.fill("#filter-search", "<svg onload")
        expect(page.locator("#match-count")).to_have_text(re.compile(r"^1 of "))
        # opened by "open all on page" above: items stay open across filtering
        assert page.get_attribute("#item-list .item-head", "aria-expanded") == "true"
        assert page.locator("#item-list .text-block").first.text_content() == "输入 <svg onload=window.__xss=1> 结束"
        page.wait_for_timeout(200)
        view.assert_quiet(report)
    finally:
        view.close()
    assert payloads  # the corpus was used


def test_filters_open_an_item_anchors_and_mismatch_marks(browser, tmp_path):
    run = mixed_run(tmp_path / "runs")
    other, _ = payload_run()
    with pytest.raises(ValueError, match="different items"):
        build_report([run, other], tmp_path / "mixed.html")
    report = build_report(
        [run, other], tmp_path / "mixed.html", figures={"f": svg_figure()}, allow_different_items=True
    )
    view = Page(browser)
    try:
        page = view.open(report)
        banner = page.locator("#different-items")
        assert banner.is_visible() and "128" in banner.inner_text() and "0 in all of them" in banner.inner_text()
        n = len(run.items)
        assert page.text_content("#match-count") == f"{n} of {n} items"
        page.select_option("#filter-j", "0")
        page.select_option("#filter-field", str(FIELDS.index("target")))
        expected = [k for k, item in enumerate(run.items) if item.j == 0 and item.correct[0] is False]
        assert expected, "the mixed run has items with a wrong target"
        assert page.text_content("#match-count") == f"{len(expected)} of {n} items"
        shown = [int(i) for i in page.eval_on_selector_all("#item-list > li", "els => els.map(e => e.dataset.index)")]
        assert shown == expected[:50]

        # parsed items only, then open the first one
        labels = page.eval_on_selector_all("#filter-status option", "os => os.map(o => [o.value, o.text])")
        ok_value = next(value for value, text in labels if text.startswith("parsed (ok)"))
        page.select_option("#filter-status", ok_value)
        parsed = [k for k in expected if run.items[k].status == "ok"]
        assert page.text_content("#match-count") == f"{len(parsed)} of {n} items"
        first = page.locator("#item-list > li").first
        first.locator(".item-head").click()
        assert first.locator(".item-head").get_attribute("aria-expanded") == "true"
        item = run.items[parsed[0]]
        assert item.output is not None
        anchors = parse_rationale(item.output).anchors
        marks = first.locator("mark.anchor")
        assert marks.count() == 6
        for k, anchor in enumerate(anchors):
            mark = marks.nth(k)
            assert mark.get_attribute("data-field") == anchor.field
            assert mark.text_content() == item.output[anchor.start : anchor.end]
            classes = (mark.get_attribute("class") or "").split()
            assert f"anchor-{anchor.field}" in classes
            wrong = item.correct[FIELDS.index(anchor.field)] is False
            assert ("anchor-mismatch" in classes) == wrong, anchor.field
        wrong_fields = [f for f, ok in zip(FIELDS, item.correct, strict=True) if ok is False]
        assert "target" in wrong_fields
        mismatch_rows = first.locator("table.record tr.mismatch")
        assert mismatch_rows.evaluate_all("rows => rows.map(r => r.dataset.field)") == wrong_fields
        for row in range(mismatch_rows.count()):
            assert "✗ mismatch" in (mismatch_rows.nth(row).text_content() or "")
        assert first.locator("table.record tr.match").count() == 6 - len(wrong_fields)
        assert first.locator(".rationale .verdict-bad").count() == len(wrong_fields)
        assert "T-F1" in (first.locator("table.record tr.field-target").text_content() or "")
        screenshot = tmp_path / "report.png"
        first.scroll_into_view_if_needed()
        page.screenshot(path=str(screenshot), full_page=False)
        assert screenshot.stat().st_size > 1000
        assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        print(f"\nscreenshot of an opened item with a wrong target: {screenshot}")

        # a tag and a category filter, then reset
        page.click("#filter-reset")
        assert page.text_content("#match-count") == f"{n} of {n} items"
        tag_options = page.eval_on_selector_all("#filter-tag option", "os => os.slice(1).map(o => [o.value, o.text])")
        value, text = tag_options[0]
        tag = text.rsplit(" (", 1)[0]
        page.select_option("#filter-tag", value)
        with_tag = sum(tag in ref.tags for ref in run.references)
        assert page.text_content("#match-count") == f"{with_tag} of {n} items"

        # the second run: its own items and filter choices
        page.select_option("#run-select", "1")
        assert page.text_content("#match-count") == f"{len(other.items)} of {len(other.items)} items"
        assert page.locator("#item-list .item-id").first.text_content() == other.items[0].id
        statuses = page.eval_on_selector_all("#filter-status option", "os => os.slice(1).map(o => o.text)")
        assert sorted(s.rsplit(" (", 1)[0] for s in statuses) == sorted(
            "parsed (ok)" if e is None else e for e in {i.error_class for i in other.items}
        )
        view.assert_quiet(report)
    finally:
        view.close()


def test_twenty_thousand_items_page_quickly(browser, tmp_path_factory):
    run, report = big_report_at(tmp_path_factory.getbasetemp() / "big-report")
    view = Page(browser)
    try:
        started = time.perf_counter()
        page = view.open(report)
        loaded = time.perf_counter() - started
        assert page.text_content("#match-count") == "20000 of 20000 items"
        assert page.locator("#item-list > li").count() == 50
        assert page.text_content("#page-info") == "of 400"
        # time a few page turns in the page itself (information only: no timing assertion)
        turns = page.evaluate(
            """() => {
              const times = [];
              for (let k = 0; k < 10; k++) {
                const t0 = performance.now();
                document.getElementById("page-next").click();
                times.push(performance.now() - t0);
              }
              return times;
            }"""
        )
        assert page.get_attribute("body", "data-page") == "11"
        first = page.locator("#item-list > li").first.get_attribute("data-index")
        assert first == "500"
        page.click("#page-last")
        assert page.locator("#item-list > li").count() == 50
        t0 = time.perf_counter()
        page.select_option("#filter-j", "0")
        filtered = time.perf_counter() - t0
        incorrect = sum(item.j == 0 for item in run.items)
        assert page.text_content("#match-count") == f"{incorrect} of 20000 items"
        t0 = time.perf_counter()
        page.fill("#filter-search", "item-1999")
        expect(page.locator("#match-count")).to_have_text(re.compile(rf"^(?!{incorrect} )\d+ of 20000 items$"))
        searched = time.perf_counter() - t0
        assert page.locator("#item-list > li").count() <= 11
        page.select_option("#page-size", "200")
        page.click("#filter-reset")
        assert page.locator("#item-list > li").count() == 200
        print(
            f"\n20,000 items in Chromium: load {loaded:.2f} s; page turn mean {sum(turns) / len(turns):.1f} ms, "
            f"max {max(turns):.1f} ms; J filter {filtered * 1000:.0f} ms; search (with 150 ms debounce) "
            f"{searched * 1000:.0f} ms"
        )
        view.assert_quiet(report)
    finally:
        view.close()


# The VARM-Bench headline numbers: label F1, JREM, HER-C, HER-L, Parse.
HEADLINE = ("Label", "JREM", "HER-C", "HER-L", "Parse")
HEADER_BOXES = """
(names) => {
  const table = document.getElementById("summary-table");
  const wrap = table.closest(".table-wrap") || table.parentElement;
  const view = wrap.getBoundingClientRect();
  const boxes = {};
  for (const th of table.querySelectorAll("thead th")) {
    const name = names.find((n) => th.textContent.trim().startsWith(n));
    if (name && !(name in boxes)) {
      const r = th.getBoundingClientRect();
      boxes[name] = {left: r.left, right: r.right};
    }
  }
  return {boxes, wrapLeft: view.left, wrapRight: view.right, innerWidth: window.innerWidth,
          scrollLeft: wrap.scrollLeft, tableWidth: table.getBoundingClientRect().width};
}
"""


def test_headline_columns_are_visible_at_1400_px_with_long_run_ids(browser, tmp_path):
    """Two runs with long ids and a 95% interval under every number: the five headline headers
    lie inside the visible part of the table at a 1,400 px wide window, without scrolling."""
    from verimod.report.html import SUMMARY_COLUMNS

    long_ids = ["20261201-134846-qwen2.5-72b-instruct-awq-taxonomy-k8-seed-0", "20261201-152210-baseline-zero-shot"]
    runs = [mixed_run(tmp_path / "runs", run_id) for run_id in long_ids]
    intervals = {r: {key: (0.5, 0.4123, 0.6789) for _, key in SUMMARY_COLUMNS} for r in long_ids}
    report = build_report(runs, tmp_path / "wide.html", intervals=intervals)
    view = Page(browser)
    try:
        page = view.open(report)
        found = page.evaluate(HEADER_BOXES, list(HEADLINE))
        assert found["innerWidth"] == 1400 and found["scrollLeft"] == 0
        assert set(found["boxes"]) == set(HEADLINE)
        visible_right = min(found["wrapRight"], found["innerWidth"])
        for name, box in found["boxes"].items():
            assert found["wrapLeft"] <= box["left"] and box["right"] <= visible_right, (name, box, found)
        # the run is named by a short label; its id is in the tooltip
        first = page.locator("#summary-table tbody th.run .run-name").first
        assert long_ids[0] in (first.get_attribute("title") or "")
        assert long_ids[0] not in (first.text_content() or "")
        # the table of contents leads to the sections
        page.click("#contents a[href='#items']")
        assert page.evaluate("location.hash") == "#items"
        for anchor in page.eval_on_selector_all("#contents a", "as => as.map(a => a.getAttribute('href'))"):
            assert page.locator(anchor).count() == 1, anchor
        view.assert_quiet(report)
    finally:
        view.close()
