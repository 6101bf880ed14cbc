"""``verimod.report.html.build_report``: one self-contained, escaped, deterministic HTML file.

The helpers here (:func:`load_payloads`, :func:`make_run`, :func:`payload_run`,
:func:`mixed_run`, :func:`big_run`, :func:`split_html`) are shared with the real-browser test
``test_html_browser.py``.
"""

from __future__ import annotations

import base64
import functools
import html
import io
import json
import re
import time
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import rationale, write_lines
from verimod import __version__
from verimod.core.runs import RunManifest, RunStore
from verimod.data.jsonl import write_jsonl
from verimod.report.html import DATA_FORMAT, build_report, json_for_script
from verimod.report.tables import percent
from verimod.tasks.varm.codebook import FIELDS
from verimod.tasks.varm.evaluate import ScoredRun, load_run
from verimod.tasks.varm.parser import PARSER_VERSION, parse_rationale
from verimod.tasks.varm.schema import VarmReference
from verimod.tasks.varm.scorer import VarmScorer
from verimod.tasks.varm.starter import load_starter

PAYLOADS_FILE = Path(__file__).with_name("xss_payloads.txt")
DATA_BLOCK = re.compile(r'(<script type="application/json" id="report-data">)(.*?)(</script>)', re.S)
RECORD = {
    "target": "小县城公务员",
    "target_type": "group",
    "target_explicitness": "explicit",
    "stance": "attack_or_endorse",
    "label": "harmful",
    "category": "status_occupation",
}
_BRACKETS = re.compile(r"[\[\]【】［］]")


def load_payloads() -> list[str]:
    """The XSS corpus (see the header of ``xss_payloads.txt`` for its format)."""
    text = PAYLOADS_FILE.read_text(encoding="utf-8")
    lines = [line for line in text.split("\n") if line.strip() and not line.startswith("#")]
    return [re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), line) for line in lines]


def _manifest(run_id: str, model: str, setting: str, n: int) -> RunManifest:
    return RunManifest(
        run_id=run_id,
        model=model,
        backend={"backend": "scripted", "model": model},
        setting=setting,
        prompt={"version": "varm-prompts/1", "sha256": "0" * 64, "file": None},
        params={},
        engine={},
        data={"path": "<test>", "sha256": "1" * 64, "n": n},
        verimod_version=__version__,
        parser_version=PARSER_VERSION,
        started_at="2024-01-01T00:00:00+00:00",
        finished_at="2024-01-01T00:01:00+00:00",
        status="completed",
    )


def make_run(
    root: Path,
    references: list[dict[str, Any]],
    samples: dict[str, dict[str, Any]],
    *,
    run_id: str = "run-1",
    model: str = "scripted:outputs.jsonl",
    setting: str = "zero-shot",
) -> ScoredRun:
    """A real run directory under ``root`` (manifest, references, samples) re-scored by
    :func:`load_run`. ``samples[id]`` holds ``output`` or ``error``; ids without one are missing."""
    manifest = _manifest(run_id, model, setting, len(references))
    store = RunStore.create(root, manifest, references)
    rows = [
        {"id": item_id, "prompt_hash": "0" * 16, "finished_at": "2024-01-01T00:00:30+00:00", **sample}
        for item_id, sample in samples.items()
    ]
    write_jsonl(store.directory / "samples.jsonl", rows)
    return load_run(store.directory)


def _usable_target(payload: str) -> str:
    """The payload as an anchor target value when the anchor grammar allows it."""
    stripped = payload.strip()
    if not stripped or _BRACKETS.search(payload) or parse_rationale(rationale(target=stripped)).values is None:
        return "小县城公务员"
    return stripped


def scored_in_memory(
    references: list[dict[str, Any]],
    samples: dict[str, dict[str, Any]],
    manifest: RunManifest,
) -> ScoredRun:
    """A :class:`ScoredRun` built without files or validation (pydantic refuses lone surrogates,
    which the report must still survive): references by ``model_construct``, items by the
    real scorer."""
    refs = [VarmReference.model_construct(**{"tags": [], **row}) for row in references]
    scorer = VarmScorer()
    items = []
    for ref in refs:
        sample = samples.get(ref.id, {})
        items.append(scorer.add(ref.id, ref, sample.get("output"), sample.get("error")))
    errors = sum(item.status == "error" for item in items)
    finished = sum(ref.id in samples for ref in refs)
    return ScoredRun(
        RunStore(Path("/nonexistent"), manifest), refs, items, scorer.scores(), errors, finished, finished - errors
    )


def payload_run(payloads: list[str] | None = None) -> tuple[ScoredRun, list[str]]:
    """A run whose item ids, inputs, tags, contexts, reference targets, outputs and error
    details — and its run id, model and setting — carry the XSS payloads.

    Item k cycles through: a correct rationale wrapped in the payload, a rationale with wrong
    stance and category, an output with no anchors, a model error whose message is the payload;
    one more item has no output at all, and one an astral prefix (UTF-16 offsets)."""
    payloads = load_payloads() if payloads is None else payloads
    references, samples = [], {}
    for k, payload in enumerate(payloads):
        item_id = f"p{k:02d} {payload}"
        target = _usable_target(payload)
        references.append(
            {
                "id": item_id,
                "text": f"输入 {payload} 结束",
                **RECORD,
                "target": target,
                "tags": [payload, "plain-tag"],
                **({"context": [payload, "上文"]} if k % 3 == 0 else {}),
            }
        )
        kind = k % 4
        if kind == 0:
            samples[item_id] = {"output": f"{payload}\n{rationale(target=target)}\n{payload}"}
        elif kind == 1:
            wrong = rationale(target=target, stance="neutral_mention", label="harmful", category="gender")
            samples[item_id] = {"output": f"{wrong} {payload}"}
        elif kind == 2:
            samples[item_id] = {"output": f"没有锚点 {payload}"}
        else:
            samples[item_id] = {"error": payload}
    references.append({"id": "missing-output", "text": "没有输出", **RECORD})
    references.append({"id": "astral", "text": "😀 𠀀 astral", **RECORD, "tags": ["😀"]})
    samples["astral"] = {"output": "😀𠀀😀 " + rationale() + " 😀"}
    manifest = _manifest("run " + payloads[0], "model " + payloads[1], "setting " + payloads[2], len(references))
    return scored_in_memory(references, samples, manifest), payloads


def mixed_run(root: Path, run_id: str = "mixed-run") -> ScoredRun:
    """The starter test split with the reference rationale as output, except: every 7th item
    names another target, every 5th has a wrong stance, every 11th has no anchors."""
    references = load_starter("test")
    samples: dict[str, dict[str, Any]] = {}
    for i, ref in enumerate(references):
        assert ref.cot is not None
        output = ref.cot
        if i % 11 == 3:
            output = "这条评论没有问题。"
        elif i % 7 == 1:
            output = rationale(
                target="完全无关的对象甲乙",
                target_type=str(ref.target_type),
                explicitness=str(ref.target_explicitness),
                stance=str(ref.stance),
                label=str(ref.label),
                category=str(ref.category),
            )
        elif i % 5 == 2:
            stance = "neutral_mention" if ref.stance != "neutral_mention" else "oppose_attack"
            output = rationale(
                target=str(ref.target),
                target_type=str(ref.target_type),
                explicitness=str(ref.target_explicitness),
                stance=stance,
                label=str(ref.label),
                category=str(ref.category),
            )
        samples[ref.id] = {"output": output}
    rows = [r.model_dump(exclude_none=True) for r in references]
    return make_run(root, rows, samples, run_id=run_id, model="scripted:mixed.jsonl", setting="zero-shot")


def big_run(root: Path, n: int = 20_000) -> ScoredRun:
    """``n`` items cycled from the starter sets; every third output is wrong, every 13th unparseable."""
    starter = load_starter("train") + load_starter("dev") + load_starter("test")
    references, samples = [], {}
    for i in range(n):
        ref = starter[i % len(starter)]
        item_id = f"item-{i:05d}"
        references.append({**ref.model_dump(exclude_none=True), "id": item_id})
        if i % 13 == 5:
            samples[item_id] = {"output": "无法解析"}
        elif i % 3 == 1:
            samples[item_id] = {
                "output": rationale(stance="quote_or_report", label="non_harmful", category="non_attack")
            }
        else:
            samples[item_id] = {"output": ref.cot}
    return make_run(root, references, samples, run_id="big-run", model="scripted:big.jsonl")


@functools.cache
def big_report_at(root: Path) -> tuple[ScoredRun, Path]:
    """The 20,000-item run and its report under ``root``, made once per test session."""
    run = big_run(root / "runs")
    return run, build_report([run], root / "big.html")


def split_html(page: str) -> tuple[str, str]:
    """(the page without the JSON block's content, the JSON block's content)."""
    match = DATA_BLOCK.search(page)
    assert match is not None, "no JSON data block"
    assert len(DATA_BLOCK.findall(page)) == 1
    return page[: match.start(2)] + page[match.end(2) :], match.group(2)


def svg_figure() -> str:
    """A small real matplotlib SVG, made deterministic."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with matplotlib.rc_context({"svg.hashsalt": "verimod", "svg.fonttype": "none"}):
        fig, ax = plt.subplots(figsize=(3, 2))
        ax.bar(["a <b>", "c & d"], [1, 2])
        ax.set_title("JREM <script>window.__xss=1</script>")
        buffer = io.StringIO()
        fig.savefig(buffer, format="svg", metadata={"Date": None})
        plt.close(fig)
    return buffer.getvalue()


class _Tags(HTMLParser):
    """Collects start tags with their attributes, and comments, of an HTML text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.comments: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_comment(self, data: str) -> None:
        self.comments.append(data)


def parse_tags(markup: str) -> _Tags:
    parser = _Tags()
    parser.feed(markup)
    parser.close()
    return parser


# Every element the template and the summary may produce; the browser adds the items later.
ALLOWED_TAGS = {
    "html", "head", "meta", "link", "title", "style", "body", "header", "h1", "h2", "h3", "p", "main", "section",
    "div", "table", "caption", "thead", "tbody", "tr", "th", "td", "span", "bdi", "figure", "img", "figcaption",
    "noscript", "form", "label", "select", "option", "input", "button", "nav", "ol", "li", "a", "footer", "script",
}  # fmt: skip


@pytest.fixture
def payload_report(tmp_path) -> tuple[str, ScoredRun, list[str]]:
    run, payloads = payload_run()
    out = build_report([run], tmp_path / "report.html", figures={"jrem": svg_figure()})
    return out.read_text(encoding="utf-8"), run, payloads


def test_payload_corpus_covers_the_brief():
    payloads = load_payloads()
    joined = "\n".join(payloads)
    assert len(payloads) >= 50
    for needle in ("<script>", "</script>", "onerror=", "javascript:", "<svg onload", "<!--", "\u2028", "`", "${"):
        assert needle in joined, needle
    assert "&lt;" in joined and "\u202e" in joined
    assert any("\ud800" <= c <= "\udfff" for c in joined), "no lone surrogate"
    assert any(p.count('"') % 2 for p in payloads), "no unbalanced quote"


def test_json_for_script_escapes_everything_that_could_end_the_element():
    value = {"a": "</script><!--<script>&\u2028\u2029\ud800 😀", "b": [1, None, 0.5]}
    text = json_for_script(value)
    assert not re.search("[<>&\u2028\u2029\ud800-\udfff]", text)
    assert json.loads(text) == value


def test_report_is_self_contained_with_a_strict_csp(tmp_path):
    run = mixed_run(tmp_path / "runs")
    page = build_report([run], tmp_path / "r.html", figures={"f": svg_figure()}).read_text(encoding="utf-8")
    outside, _ = split_html(page)
    assert page.startswith("<!DOCTYPE html>")
    assert not re.search(r"https?://|//[a-z0-9.-]+\.[a-z]{2,}/", outside, re.I), "a network URL in the page"
    assert "@import" not in outside and "url(" not in outside
    tags = parse_tags(outside).tags
    for tag, attrs in tags:
        for name in ("src", "href", "action", "data", "poster", "srcset", "formaction"):
            value = attrs.get(name)
            fragment = tag == "a" and name == "href" and re.fullmatch(r"#[a-z-]+", value or "")
            assert value is None or value.startswith("data:") or fragment, (tag, name, value)
    metas = [attrs for tag, attrs in tags if tag == "meta" and attrs.get("http-equiv") == "Content-Security-Policy"]
    assert len(metas) == 1
    csp = metas[0]["content"]
    assert csp is not None
    directives = dict(d.strip().split(" ", 1) for d in csp.split(";"))
    assert directives["default-src"] == "'none'" and directives["img-src"] == "data:"
    assert "unsafe-inline" not in directives["script-src"] and "unsafe-eval" not in csp
    nonce = re.fullmatch(r"'nonce-([A-Za-z0-9_-]{20,})'", directives["script-src"])
    assert nonce is not None
    assert directives["require-trusted-types-for"] == "'script'"
    scripts = [attrs for tag, attrs in tags if tag == "script"]
    assert scripts == [{"type": "application/json", "id": "report-data"}, {"nonce": nonce.group(1)}]
    # the CSP meta comes before any style or script
    assert page.index("Content-Security-Policy") < page.index("<style>") < page.index("<script")


def test_json_block_round_trips(payload_report):
    page, run, _ = payload_report
    _, block = split_html(page)
    assert not re.search("[<>&\u2028\u2029\ud800-\udfff]", block)
    data = json.loads(block)
    assert data["format"] == DATA_FORMAT and data["fields"] == list(FIELDS)
    (run_data,) = data["runs"]
    manifest = run.store.manifest
    assert (run_data["id"], run_data["model"], run_data["setting"]) == (
        manifest.run_id,
        manifest.model,
        manifest.setting,
    )
    assert len(run_data["items"]) == len(run.items)
    for row, ref, item in zip(run_data["items"], run.references, run.items, strict=True):
        assert row["id"] == ref.id == item.id
        assert row["x"] == ref.text and row["g"] == ref.tags and row["o"] == item.output
        assert row["r"] == [getattr(ref, f) for f in FIELDS]
        assert row["c"] == list(item.correct) and row["j"] == item.j and row["t"] == item.target_char_f1
        assert row["s"] == item.status and row["e"] == item.error_class and row["d"] == item.detail
        assert row["v"] == (None if item.values is None else list(item.values))
        if ref.context is not None:
            assert row["ctx"] == list(ref.context)
        # anchor offsets are UTF-16 indices: slicing the UTF-16 text gives the anchor
        anchors = parse_rationale(item.output).anchors if item.output is not None else ()
        assert len(row["a"]) == len(anchors)
        if item.output is not None:
            units = item.output.encode("utf-16-le", "surrogatepass")
            for (field, start, end, value), anchor in zip(row["a"], anchors, strict=True):
                assert FIELDS[field] == anchor.field and value == anchor.value
                text = units[2 * start : 2 * end].decode("utf-16-le", "surrogatepass")
                assert text == item.output[anchor.start : anchor.end]
    astral = next(row for row in run_data["items"] if row["id"] == "astral")
    assert astral["a"][0][1] > parse_rationale(astral["o"]).anchors[0].start  # shifted by the surrogate pairs
    statuses = {row["s"] for row in run_data["items"]}
    assert statuses == {"ok", "parse_error", "error", "missing"}


def test_payloads_never_reach_the_html_unescaped(payload_report):
    page, run, payloads = payload_report
    outside, _ = split_html(page)
    for payload in payloads:
        if re.search("[<>\"']", payload):  # html.escape leaves none of these raw
            assert payload not in outside, payload
    assert not re.search("[\ud800-\udfff]", outside)
    parsed = parse_tags(outside)
    assert parsed.comments == []
    assert {tag for tag, _ in parsed.tags} <= ALLOWED_TAGS
    for tag, attrs in parsed.tags:
        assert not any(name.startswith("on") for name in attrs), (tag, attrs)
        assert not any("javascript:" in (value or "").lower() for value in attrs.values()), (tag, attrs)
    assert sum(tag == "script" for tag, _ in parsed.tags) == 2
    assert sum(tag == "img" for tag, _ in parsed.tags) == 1
    # the run's names are shown, escaped and isolated, and read back exactly
    manifest = run.store.manifest
    assert "<bdi>run &lt;script&gt;window.__xss=1&lt;/script&gt;</bdi>" in outside
    runs_table = re.search(r'<table id="runs-table">.*?</table>', outside, re.S)
    assert runs_table is not None
    cells = [html.unescape(c) for c in re.findall(r"<td class=\"text\"><bdi>(.*?)</bdi></td>", runs_table.group(0))]
    assert cells[:3] == [manifest.run_id, manifest.model, manifest.setting]
    title = re.search(r"<title>(.*?)</title>", outside, re.S)
    assert (
        title is not None and html.unescape(title.group(1)) == f"verimod report: {manifest.model} ({manifest.setting})"
    )
    # every template placeholder was filled once; a placeholder written in the data was not
    assert not re.search(r"\{\{[a-z_]+\}\}", outside)
    texts = [item["x"] for item in json.loads(split_html(page)[1])["runs"][0]["items"]]
    assert "输入 {{title}} {{data}} {{script}} {{nonce}} 结束" in texts


def test_twenty_thousand_items_are_embedded_once_not_rendered(tmp_path_factory):
    started = time.perf_counter()
    run, out = big_report_at(tmp_path_factory.getbasetemp() / "big-report")
    made = time.perf_counter()
    page = out.read_text(encoding="utf-8")
    outside, block = split_html(page)
    data = json.loads(block)
    assert [item["id"] for item in data["runs"][0]["items"]] == [item.id for item in run.items]
    assert len(run.items) == 20_000
    tags = [tag for tag, _ in parse_tags(outside).tags]
    assert tags.count("li") == tags.count("a") < 20  # the table of contents only
    assert tags.count("tr") < 100 and len(tags) < 1000
    assert outside.count("item-0") == 0
    print(f"\n20,000 items: run and report made in {made - started:.2f} s, {out.stat().st_size / 1e6:.1f} MB")


def test_output_is_deterministic_except_for_the_nonce(tmp_path):
    run, _ = payload_run()
    figure = svg_figure()
    first = build_report([run], tmp_path / "a.html", figures={"f": figure}).read_text(encoding="utf-8")
    second = build_report([run], tmp_path / "b.html", figures={"f": figure}).read_text(encoding="utf-8")
    nonces = [re.findall(r"nonce-([A-Za-z0-9_-]+)", p)[0] for p in (first, second)]
    assert nonces[0] != nonces[1]
    assert first.count(nonces[0]) == 2  # the CSP and the script tag
    assert first.replace(nonces[0], "N") == second.replace(nonces[1], "N")


def test_summary_tables_intervals_and_error_classes(tmp_path):
    first = mixed_run(tmp_path / "runs", "run-a")
    second = mixed_run(tmp_path / "runs", "run-b")
    intervals = {
        "run-a": {"jrem": (0.5, 0.4123, 0.6789), "mismatch.stance": (0.1, 0.05, 0.15)},
        "run-b": {"shapley.decision": (0.0, -0.01, 0.02)},
    }
    page = build_report([first, second], tmp_path / "r.html", intervals=intervals, title="两 runs").read_text(
        encoding="utf-8"
    )
    outside, _ = split_html(page)
    assert "<title>两 runs</title>" in page
    header = re.search(r'<table id="summary-table">.*?</thead>', outside, re.S)
    assert header is not None
    headers = re.findall(r"<th(?: [^>]*)?>(.*?)</th>", header.group(0))
    assert headers == [
        "Run", "N", "Label F1", "JREM", "HER-C", "HER-L", "Parse", "Category", "T-F1", "Type", "Explicitness",
        "Stance", "Format",
    ]  # the headline columns first  # fmt: skip
    scores = first.scores
    # short labels (the two runs share model and setting: numbered), the id in the tooltip
    pattern = r'<tr><th scope="row" class="text run"><span class="run-name" title="run-a · .*?</tr>'
    row = re.search(pattern, outside, re.S)
    assert row is not None and "<bdi>scripted:mixed.jsonl · zero-shot (1)</bdi>" in row.group(0)
    for value in (scores.jrem, scores.parse_rate, scores.label_macro_f1, scores.her_c):
        assert f">{percent(value)}<" in row.group(0)
    assert "[41.23, 67.89]" in row.group(0)
    assert "[5.00, 15.00]" in outside and "[-1.00, 2.00]" in outside
    assert 'id="mismatch-table"' in outside and 'id="shapley-table"' in outside
    errors = re.search(r'<table id="error-table">.*?</table>', outside, re.S)
    assert errors is not None
    for name, count in scores.error_classes.items():
        assert re.search(rf"<th scope='row'>{name}</th><td class=\"num\">{count}<", errors.group(0))
    with pytest.raises(ValueError, match="unknown run"):
        build_report([first], tmp_path / "x.html", intervals={"nope": {}})
    with pytest.raises(ValueError, match="unknown metric 'T-F1'"):
        build_report([first], tmp_path / "x.html", intervals={"run-a": {"T-F1": (0.1, 0.0, 0.2)}})


def test_figures_are_checked_and_embedded_as_data_images(tmp_path):
    run = mixed_run(tmp_path / "runs")
    figure = svg_figure()
    page = build_report([run], tmp_path / "r.html", figures={"bars <b>": figure}).read_text(encoding="utf-8")
    match = re.search(r'<img src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)" alt="bars &lt;b&gt;">', page)
    assert match is not None
    assert base64.b64decode(match.group(1)).decode("utf-8") == figure
    assert "<figcaption><bdi>bars &lt;b&gt;</bdi></figcaption>" in page
    bad = {
        "script": figure.replace("</svg>", "<script>window.__xss=1</script></svg>"),
        "event-handler": figure.replace("<svg ", '<svg onload="window.__xss=1" ', 1),
        "links to": figure.replace("</svg>", '<a href="javascript:alert(1)"><text>x</text></a></svg>'),
        "foreignobject": figure.replace("</svg>", "<foreignObject><div/></foreignObject></svg>"),
        "not well-formed": "<svg><g></svg>",
        "not an SVG": "<html xmlns='http://www.w3.org/1999/xhtml'/>",
    }
    for reason, svg in bad.items():
        with pytest.raises(ValueError, match=reason):
            build_report([run], tmp_path / "x.html", figures={"f": svg})


def test_figures_from_the_plots_module_are_accepted(tmp_path):
    from verimod.report.plots import figure_to_svg, mismatch_bars, shapley_bars

    run = mixed_run(tmp_path / "runs")
    figures = {
        "mismatch": figure_to_svg(mismatch_bars({"a <b>": run.scores.mismatch}), id_prefix="m-"),
        "shapley": figure_to_svg(shapley_bars({"a <b>": run.scores.shapley}), id_prefix="s-"),
    }
    page = build_report([run], tmp_path / "r.html", figures=figures).read_text(encoding="utf-8")
    images = re.findall(r'<img src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"', page)
    assert [base64.b64decode(i).decode("utf-8") for i in images] == list(figures.values())


def test_bad_arguments_are_refused(tmp_path):
    run = mixed_run(tmp_path / "runs")
    with pytest.raises(ValueError, match="at least one run"):
        build_report([], tmp_path / "x.html")
    with pytest.raises(ValueError, match="share the id"):
        build_report([run, run], tmp_path / "x.html")
    assert not (tmp_path / "x.html").exists()


def test_report_of_a_run_made_by_verimod_eval(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from verimod.cli.app import app

    monkeypatch.setenv("VERIMOD_CACHE_DIR", str(tmp_path / "cache"))
    test = load_starter("test")[:12]
    data = write_lines(tmp_path / "data.jsonl", [r.model_dump(exclude_none=True) for r in test])
    outputs = write_lines(
        tmp_path / "out.jsonl",
        [{"id": r.id, "output": r.cot if i % 4 else "</script>无锚点"} for i, r in enumerate(test)],
    )
    args = ["eval", "--model", f"scripted:{outputs}", "--data", str(data), "--runs-dir", str(tmp_path / "runs")]
    result = CliRunner().invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    run = load_run(next((tmp_path / "runs").iterdir()))
    page = build_report([run], tmp_path / "deep" / "report.html").read_text(encoding="utf-8")
    outside, block = split_html(page)
    assert run.store.manifest.run_id in outside
    items = json.loads(block)["runs"][0]["items"]
    assert [i["o"] for i in items] == [i.output for i in run.items]
    assert sum(i["e"] == "missing_anchor" for i in items) == 3
