import json

from tests.tasks.varm.test_disputes import refs


def test_score_cli_disputed_modes(cli, tmp_path):
    ref = tmp_path / "ref.jsonl"
    ref.write_text("\n".join(json.dumps(r.model_dump(exclude_none=True), ensure_ascii=False) for r in refs()) + "\n")
    harmful = (
        "目标[T: 河南人]，[TY: group]，[T: explicit]，[S: attack_or_endorse]，[L: harmful]，[C: region_ethnicity]。"
    )
    pred = tmp_path / "pred.jsonl"
    pred.write_text("\n".join(json.dumps({"id": i, "output": harmful}, ensure_ascii=False) for i in ("d", "p")) + "\n")
    scores = {
        mode: json.loads(cli("score", pred, "--ref", ref, "--disputed", mode, "--json", "-").stdout)
        for mode in ("keep", "drop", "reading")
    }
    assert scores["keep"]["n"] == 2 and scores["keep"]["jrem"] == 1.0
    assert scores["drop"]["n"] == 1 and scores["drop"]["jrem"] == 1.0
    assert scores["reading"]["n"] == 2 and scores["reading"]["jrem"] == 0.5
    result = cli("score", pred, "--ref", ref, "--disputed", "all")
    assert result.exit_code == 2 and "--disputed" in result.output
