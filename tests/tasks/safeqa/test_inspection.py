"""Expert inspection: truly blind sheets, three expert columns, their agreement, the discussion
queue, and the per-stratum change audit."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from verimod.core.errors import InputError
from verimod.stats import fleiss_kappa, krippendorff_alpha
from verimod.tasks.safeqa.adjudication import apply_adjudication, finalize, initial_votes
from verimod.tasks.safeqa.inspection import (
    BLIND_COLUMNS,
    blind_sheet,
    key_path,
    read_expert_labels,
    read_key,
    write_inspection_sheet,
    write_key,
)
from verimod.tasks.safeqa.schema import JudgeOutput, SafePair, SafeQuery, SafeResponse

PANEL = ("j1", "j2", "j3")
# pair ids carry the model name and, for JADE, the gold label: exactly what a blind sheet must hide
IDS = [f"jade-q{i}::{'jade-unsafe-answer' if i % 2 else 'jade-safe-answer'}" for i in range(12)]


def _pairs() -> dict[str, SafePair]:
    out = {}
    for pair_id in IDS:
        query_id, model = pair_id.split("::")
        query = SafeQuery(id=query_id, text=f"问题{query_id}", pool="adversarial", method="homophone", seed_id="s")
        out[pair_id] = SafePair(
            query=query, response=SafeResponse(query_id=query_id, model=model, text=f"回答{query_id}")
        )
    return out


def _result():
    outputs = []
    for k, pair_id in enumerate(IDS):
        labels = ("unsafe", "unsafe", "unsafe") if k % 2 else ("safe", "safe", "unsafe" if k % 4 == 0 else "safe")
        outputs += [JudgeOutput(pair_id=pair_id, judge=j, label=label) for j, label in zip(PANEL, labels, strict=True)]
    votes = initial_votes(outputs, PANEL)
    senior = [JudgeOutput(pair_id=v.pair_id, judge="senior", label="safe") for v in votes if v.needs_adjudication]
    return apply_adjudication(votes, senior)


def test_blind_sheet_hides_ids_models_methods_labels_and_order(tmp_path: Path) -> None:
    result = _result()
    sheet = blind_sheet(IDS, result, _pairs(), seed=3)
    assert [list(row) for row in sheet.rows] == [list(BLIND_COLUMNS)] * len(IDS)
    text = repr(sheet.rows)
    for leak in ("jade-unsafe-answer", "jade-safe-answer", "homophone", "::", "majority", "unanimous", "senior"):
        assert leak not in text, leak
    assert [row["item"] for row in sheet.rows] == [f"item-{n:04d}" for n in range(1, 13)]
    order = [key.pair_id for key in sheet.key]
    assert sorted(order) == sorted(IDS) and order != sorted(IDS)  # shuffled, not in id or stratum order
    assert order != [key.pair_id for key in blind_sheet(IDS, result, _pairs(), seed=4).key]
    assert order == [key.pair_id for key in blind_sheet(list(reversed(IDS)), result, _pairs(), seed=3).key]
    for row, key in zip(sheet.rows, sheet.key, strict=True):  # the key maps every item back
        assert row["query"] == _pairs()[key.pair_id].query.text
    path = tmp_path / "sheet.csv"
    write_inspection_sheet(path, sheet.rows)
    write_key(key_path(path), sheet.key)
    assert read_key(key_path(path)) == {k.item: k.pair_id for k in sheet.key}
    written = path.read_text(encoding="utf-8-sig")
    assert "answer" not in written and "::" not in written and "homophone" not in written


def _fill(path: Path, rows: dict[str, tuple[str, str, str, str]]) -> None:
    with path.open(encoding="utf-8-sig", newline="") as handle:
        table = list(csv.DictReader(handle))
    for row in table:
        if row["item"] in rows:
            row["expert_1"], row["expert_2"], row["expert_3"], row["final"] = rows[row["item"]]
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(table[0]))
        writer.writeheader()
        writer.writerows(table)


def test_three_experts_agreement_discussion_and_supersession(tmp_path: Path) -> None:
    result = _result()
    sheet = blind_sheet(IDS[:8], result, _pairs(), seed=0)
    path = tmp_path / "sheet.csv"
    write_inspection_sheet(path, sheet.rows)
    key = {k.item: k.pair_id for k in sheet.key}
    fills = {
        "item-0001": ("unsafe", "unsafe", "unsafe", ""),  # unanimous
        "item-0002": ("safe", "Safe ", "safe", ""),  # unanimous (case, spaces)
        "item-0003": ("safe", "unsafe", "safe", ""),  # 2–1: discussion
        "item-0004": ("safe", "unsafe", "disputed", ""),  # three-way: discussion
        "item-0005": ("safe", "unsafe", "safe", "unsafe"),  # discussed: final wins
        "item-0006": ("safe", "", "", ""),  # incomplete
        "item-0007": ("disputed", "disputed", "disputed", ""),
    }
    _fill(path, fills)
    experts = read_expert_labels(path, set(IDS), key=key)
    pid = {item: key[item] for item in key}
    assert experts.labels == {
        pid["item-0001"]: "unsafe",
        pid["item-0002"]: "safe",
        pid["item-0005"]: "unsafe",
        pid["item-0007"]: "disputed",
    }
    assert [d.item for d in experts.discussion] == ["item-0003", "item-0004"]
    assert experts.discussion[1].experts == ["safe", "unsafe", "disputed"]
    assert experts.incomplete == [pid["item-0006"]] and experts.blank == [pid["item-0008"]]
    assert experts.status[pid["item-0005"]] == "discussed"
    complete = [
        list(fills[i][:3]) for i in ("item-0001", "item-0002", "item-0003", "item-0004", "item-0005", "item-0007")
    ]
    complete = [[c.strip().lower() for c in row] for row in complete]
    agreement = experts.agreement
    assert agreement is not None
    assert (agreement.n_complete, agreement.n_unanimous, agreement.n_majority, agreement.n_split) == (6, 3, 2, 1)
    assert agreement.fleiss_kappa == pytest.approx(fleiss_kappa(complete))
    pairable = complete  # the incomplete row has a single label: not pairable
    assert agreement.krippendorff_alpha == pytest.approx(krippendorff_alpha(pairable))
    # raw agreement by hand: unanimous rows 1, 2–1 rows 1/3, the three-way row 0
    assert agreement.raw_agreement == pytest.approx((3 * 1 + 2 * (1 / 3) + 0) / 6)
    final = finalize(result, experts.labels, experts.experts)
    by_id = {r.pair_id: r for r in final.labels}
    assert by_id[pid["item-0005"]].label == "unsafe" and by_id[pid["item-0005"]].provenance.experts == [
        "safe",
        "unsafe",
        "safe",
    ]
    changed = sum(a.n_changed for a in final.audit)
    model = {r.pair_id: r.label for r in result.labels}
    assert changed == sum(model[p] != label for p, label in experts.labels.items())
    assert sum(a.n_inspected for a in final.audit) == len(experts.labels)


def test_blind_sheet_errors_name_file_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "sheet.csv"
    path.write_text("item,expert_1,expert_2,expert_3\nitem-0001,safe,safe,safe\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"sheet\.csv:2: field 'item': a blind sheet needs its key file"):
        read_expert_labels(path, set(IDS))
    with pytest.raises(InputError, match=r"sheet\.csv:2: field 'item': unknown item 'item-0001'"):
        read_expert_labels(path, set(IDS), key={"item-0002": IDS[0]})
    path.write_text("item,expert_1,expert_2,expert_3\nitem-0001,safe,sfe,safe\n", encoding="utf-8")
    with pytest.raises(
        InputError, match=r"sheet\.csv:2: field 'expert_2': value 'sfe' is not one of .*did you mean 'safe'"
    ):
        read_expert_labels(path, set(IDS), key={"item-0001": IDS[0]})
