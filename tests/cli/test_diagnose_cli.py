"""``verimod diagnose`` and ``runs compare --paired`` on real run directories."""

import json

import pytest

from tests.conftest import write_lines
from verimod.tasks.varm.corrupt import demo_outputs
from verimod.tasks.varm.starter import load_starter

TEST = load_starter("test")


@pytest.fixture
def two_runs(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("VERIMOD_CACHE_DIR", str(tmp_path / "cache"))
    data = write_lines(tmp_path / "data.jsonl", [r.model_dump(exclude_none=True) for r in TEST])
    runs = []
    for seed in (1, 2):
        outputs, _ = demo_outputs(TEST, seed=seed)
        answers = write_lines(tmp_path / f"a{seed}.jsonl", [{"id": k, "output": v} for k, v in outputs.items()])
        result = cli(
            "eval", "--model", f"scripted:{answers}", "--data", data, "--runs-dir", tmp_path / "runs", "--quiet"
        )
        # demo outputs leave some items without an output: failed samples, exit code 3
        assert result.exit_code == (3 if len(outputs) < len(TEST) else 0), result.stderr
    runs = sorted((tmp_path / "runs").iterdir())
    return runs


def test_intervals(cli, two_runs):
    result = cli("diagnose", "intervals", two_runs[0], "--bootstrap", "200", "--json")
    assert result.exit_code == 0
    found = json.loads(result.stdout)
    assert found["jrem"]["low"] <= found["jrem"]["estimate"] <= found["jrem"]["high"]
    assert "shapley.referent" in found and "mismatch.target" in found
    table = cli("diagnose", "intervals", two_runs[0], "--bootstrap", "50")
    assert "95% CI" in table.stdout and "jrem" in table.stdout


def test_errors(cli, two_runs):
    report = json.loads(cli("diagnose", "errors", two_runs[0], "--json").stdout)
    assert report["n"] == len(TEST) and report["hidden_errors"] and report["parse_errors"]
    assert {m["field"] for m in report["confusion"]} == {
        "target_type",
        "target_explicitness",
        "stance",
        "label",
        "category",
    }
    text = cli("diagnose", "errors", two_runs[0]).stdout
    assert "hidden record errors" in text and "confusion: label" in text and "tag: quotation" in text
    for option in ("--examples", "--show"):
        refused = cli("diagnose", "errors", two_runs[0], option, "-1")
        assert refused.exit_code == 2 and f"Invalid value for '{option}'" in refused.output
    quiet = json.loads(cli("diagnose", "errors", two_runs[0], "--examples", "0", "--json").stdout)
    assert quiet["parse_errors"] and all(not c["examples"] for c in quiet["parse_errors"])


def test_paired_compare(cli, two_runs):
    result = cli("runs", "compare", *two_runs, "--paired", "--bootstrap", "200", "--format", "json")
    assert result.exit_code == 0
    comparison = json.loads(result.stdout)
    jrem = next(d for d in comparison["differences"] if d["metric"] == "jrem")
    assert jrem["difference"] == pytest.approx(jrem["b"] - jrem["a"])
    m = comparison["mcnemar"]
    assert m["both"] + m["only_a"] + m["only_b"] + m["neither"] == len(TEST)
    table = cli("runs", "compare", *two_runs, "--paired", "--bootstrap", "100")
    assert "McNemar" in table.stdout and "B − A" in table.stdout
    three = cli("runs", "compare", *two_runs, two_runs[0], "--paired")
    assert three.exit_code == 2 and "exactly two" in three.stderr


def test_plots_writes_png_and_svg(cli, two_runs, tmp_path):
    out = tmp_path / "plots"
    result = cli("diagnose", "plots", *two_runs, "-o", out, "--bootstrap", "50")
    assert result.exit_code == 0, result.stderr
    names = {p.name for p in out.iterdir()}
    for stem in ("mismatch", "shapley", "category-f1", "confusion-run1-label", "confusion-run2-category"):
        assert {f"{stem}.png", f"{stem}.svg"} <= names
    assert (out / "shapley.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    import xml.etree.ElementTree as ET

    ET.fromstring((out / "mismatch.svg").read_text(encoding="utf-8"))


def test_cue_subset_and_cue_diagnosis(cli, two_runs, tmp_path):
    data = tmp_path / "data.jsonl"
    subset = tmp_path / "cues.jsonl"
    result = cli("diagnose", "cue-subset", data, subset, "--ratio", "3:2", "--seed", "4")
    assert result.exit_code == 0, result.stderr
    assert "demographic_identity:" in result.stdout and "references written" in result.stdout
    rows = [json.loads(x) for x in subset.read_text(encoding="utf-8").splitlines()]
    assert rows and all("cues" in r["meta"] for r in rows)
    reports = json.loads(cli("diagnose", "cues", *two_runs, "--subset", subset, "--json").stdout)
    assert len(reports) == 2
    families = {f["family"]: f for f in reports[0]["families"]}
    assert set(families) == {"demographic_identity", "social_status", "body_health", "general_abuse"}
    for family in families.values():
        if family["n_non_harmful"]:
            assert family["n_harmful"] * 2 == family["n_non_harmful"] * 3
    table = cli("diagnose", "cues", *two_runs)
    assert table.exit_code == 0 and "gap H − NH" in table.stdout
    bad = cli("diagnose", "cue-subset", data, subset, "--ratio", "sixty")
    assert bad.exit_code == 2 and "--ratio" in bad.stderr


def test_report_command_writes_one_self_contained_file(cli, two_runs, tmp_path):
    out = tmp_path / "r.html"
    result = cli("report", *two_runs, "-o", out, "--bootstrap", "50", "--title", "<b>my</b> report")
    assert result.exit_code == 0, result.stderr
    html = out.read_text(encoding="utf-8")
    assert html.count("data:image/svg+xml;base64,") >= 4  # the figures
    assert "<b>my</b>" not in html and "&lt;b&gt;my&lt;/b&gt; report" in html
    assert "http://" not in html.split('type="application/json"')[0] and "https://" not in html
    assert "Content-Security-Policy" in html
    again = cli("report", two_runs[0], two_runs[0], "-o", out)
    assert again.exit_code == 2 and "twice" in again.stderr


@pytest.fixture
def short_run(cli, tmp_path, two_runs):
    """A third run over the first 30 test items only."""
    data = write_lines(tmp_path / "short.jsonl", [r.model_dump(exclude_none=True) for r in TEST[:30]])
    outputs, _ = demo_outputs(TEST[:30], seed=3)
    answers = write_lines(tmp_path / "a3.jsonl", [{"id": k, "output": v} for k, v in outputs.items()])
    args = ("eval", "--model", f"scripted:{answers}", "--data", data, "--runs-dir", tmp_path / "short-runs", "--quiet")
    assert cli(*args).exit_code == (3 if len(outputs) < 30 else 0)  # items without output: failed samples
    (run,) = (tmp_path / "short-runs").iterdir()
    return run


def test_runs_over_different_items_are_refused_or_marked(cli, two_runs, short_run, tmp_path):
    for command in (("report", "-o", tmp_path / "r.html"), ("diagnose", "plots", "-o", tmp_path / "p")):
        refused = cli(*command, two_runs[0], short_run, "--bootstrap", "10")
        assert refused.exit_code == 2, refused.stdout
        (line,) = refused.stderr.strip().splitlines()
        assert f": {len(TEST)}" in line and ": 30" in line and "--allow-different-items" in line
    assert not (tmp_path / "r.html").exists() and not (tmp_path / "p").exists()
    shown = cli("report", two_runs[0], short_run, "-o", tmp_path / "r.html", "--bootstrap", "10",
                "--allow-different-items")  # fmt: skip
    assert shown.exit_code == 0, shown.stderr
    assert 'id="different-items"' in (tmp_path / "r.html").read_text(encoding="utf-8")
    plotted = cli("diagnose", "plots", two_runs[0], short_run, "-o", tmp_path / "p", "--bootstrap", "10",
                  "--allow-different-items")  # fmt: skip
    assert plotted.exit_code == 0 and "different items" in plotted.stderr
    assert cli("report", *two_runs, "-o", tmp_path / "same.html", "--bootstrap", "10").exit_code == 0


def test_every_bar_of_the_run_figures_carries_its_item_count(two_runs):
    from verimod.report.figures import cue_jrem, run_figures
    from verimod.tasks.varm.evaluate import load_run

    runs = [load_run(r) for r in two_runs]
    figures = run_figures(runs, 10, 0, cue_jrem(runs))
    for stem in ("mismatch", "shapley", "category-f1", "cue-families"):
        for ax in figures[stem].axes:
            bars = len(ax.patches) if stem != "shapley" else len(runs)
            assert sum("n=" in t.get_text() for t in ax.texts) == bars > 0, stem
    shapley = [t.get_text() for t in figures["shapley"].axes[0].texts]
    assert all(t.endswith(f"n={len(TEST)}") for t in shapley)


def test_plots_subset_draws_the_cue_figure_over_the_challenge_subsets(cli, two_runs, tmp_path):
    from verimod.report.figures import cue_jrem
    from verimod.tasks.varm.cues import cue_subset_ids
    from verimod.tasks.varm.evaluate import load_run
    from verimod.tasks.varm.io import load_references

    subset = tmp_path / "cues.jsonl"
    assert cli("diagnose", "cue-subset", tmp_path / "data.jsonl", subset, "--ratio", "3:2").exit_code == 0
    whole, part = tmp_path / "whole", tmp_path / "part"
    assert cli("diagnose", "plots", *two_runs, "-o", whole, "--bootstrap", "10").exit_code == 0
    result = cli("diagnose", "plots", *two_runs, "-o", part, "--bootstrap", "10", "--subset", subset)
    assert result.exit_code == 0, result.stderr
    assert (part / "cue-families.svg").read_bytes() != (whole / "cue-families.svg").read_bytes()
    assert (part / "mismatch.svg").read_bytes() == (whole / "mismatch.svg").read_bytes()
    ids = cue_subset_ids(load_references(subset))
    counts = cue_jrem([load_run(two_runs[0])], ids).counts
    reports = json.loads(cli("diagnose", "cues", two_runs[0], "--subset", subset, "--json").stdout)
    assert next(iter(counts.values())) == {
        f["family"]: (f["n_harmful"], f["n_non_harmful"]) for f in reports[0]["families"]
    }
    plain = write_lines(tmp_path / "plain.jsonl", [r.model_dump(exclude_none=True) for r in TEST[:3]])
    bad = cli("diagnose", "plots", *two_runs, "-o", tmp_path / "x", "--subset", plain)
    assert bad.exit_code == 2 and "cue-subset" in bad.stderr
