"""Chinese and generic seed sources through the data adapters: label mapping, the policy for
attacks on individuals, groups from a target column, exact counts — on hand-made files and on
the real COLD and SWSR files (skipped when ../shared/data is absent)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from verimod.core.errors import InputError
from verimod.tasks.softhate.seed_sources import read_adapter_seeds

COLD_TEST = (
    "\ufeff,split,topic,label,fine-grained-label,TEXT\n"
    "1,test,region,1,2,河南人都是骗子，离他们远点\n"
    "2,test,gender,1,1,这个女的就是个骗子\n"
    "3,test,race,0,3,不要歧视黑人\n"
    "4,test,region,0,0,今天天气不错\n"
)


def counts_add_up(read) -> None:
    assert read.converted + sum(read.skipped.values()) == read.read


def test_cold_labels_and_attacks_on_individuals(tmp_path):
    path = tmp_path / "test.csv"
    path.write_text(COLD_TEST, encoding="utf-8")
    read = read_adapter_seeds(path, "cold")
    counts_add_up(read)
    assert [(i.id, i.label) for i in read.items] == [("cold-test-1", "hate"), ("cold-test-3", "non_hate"),
                                                     ("cold-test-4", "non_hate")]  # fmt: skip
    assert read.skipped == {"attack on an individual": 1}
    first = read.items[0]
    assert (first.source, first.group, first.original["topic"], first.original["target_type"]) == (
        "cold", None, "region", "group"
    )  # fmt: skip
    as_hate = read_adapter_seeds(path, "cold", individual="hate")
    assert [i.label for i in as_hate.items] == ["hate", "hate", "non_hate", "non_hate"] and not as_hate.skipped
    assert read_adapter_seeds(path, "cold", individual="non_hate").items[1].label == "non_hate"
    with pytest.raises(ValueError, match="individual"):
        read_adapter_seeds(path, "cold", individual="maybe")  # type: ignore[arg-type]


def test_generic_files_name_their_group(tmp_path):
    path = tmp_path / "posts.csv"
    path.write_text("idx,content,toxic,group\n1,外地人抢走了工作机会,1,外地人\n2,大家好,0,\n3,无标签,,\n", "utf-8")
    read = read_adapter_seeds(path, "generic", column_map="id=idx; text=content; label=toxic:1=harmful,0=non_harmful; "
                              "target=group?")  # fmt: skip
    counts_add_up(read)
    assert [(i.id, i.label, i.group) for i in read.items] == [("1", "hate", "外地人"), ("2", "non_hate", None)]
    assert read.skipped == {"no label": 1}
    bad = tmp_path / "bad.csv"
    bad.write_text("idx,content,toxic\n1,好,7\n", "utf-8")
    with pytest.raises(InputError) as err:
        read_adapter_seeds(bad, "generic", column_map="id=idx; text=content; label=toxic:1=harmful,0=non_harmful")
    assert "bad.csv:2" in str(err.value.problem)


def _real(shared_data: Path, *parts: str) -> Path:
    path = shared_data.joinpath(*parts)
    if not path.is_file():
        pytest.skip(f"real data file {path} is absent")
    return path


def test_real_cold_and_swsr_counts(shared_data):
    cold = _real(shared_data, "cold", "test.csv")
    read = read_adapter_seeds(cold, "cold")
    counts_add_up(read)
    frame = pd.read_csv(cold, encoding="utf-8-sig")
    individual = int((frame["fine-grained-label"] == 1).sum())  # counted independently with pandas
    assert read.skipped["attack on an individual"] == individual
    assert sum(i.label == "hate" for i in read.items) == int((frame["label"] == 1).sum()) - individual
    swsr = _real(shared_data, "swsr", "SexComment.csv")
    read = read_adapter_seeds(swsr, "swsr")
    counts_add_up(read)
    comments = pd.read_csv(swsr, encoding="utf-8-sig")
    assert sum(i.label == "hate" for i in read.items) == int(
        ((comments["label"] == 1) & (comments["target"] == "G")).sum()
    )
    assert read.skipped["attack on an individual"] == int(
        ((comments["label"] == 1) & (comments["target"] == "I")).sum()
    )
