"""The items of a run, streamed (tasks/varm/run_items.py): references read from their file on
demand, requests built as the engine reads them (issue #20: memory O(concurrency + scores))."""

import gc
import json
from collections.abc import Iterator, Sequence

import pytest

from verimod.core.errors import InputError
from verimod.models.base import GenerationParams
from verimod.tasks.varm.prompts import load_prompt
from verimod.tasks.varm.run_items import ReferenceFile, RequestPlan, spool_references
from verimod.tasks.varm.schema import VarmReference
from verimod.tasks.varm.starter import load_starter


class CountingReferences(Sequence[VarmReference]):
    """References that count how many were read."""

    def __init__(self, items: list[VarmReference]) -> None:
        self.items = items
        self.read = 0

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index):  # type: ignore[override]
        self.read += 1
        return self.items[index]

    def __iter__(self) -> Iterator[VarmReference]:
        for item in self.items:
            self.read += 1
            yield item


def test_requests_are_built_as_they_are_read():
    references = CountingReferences(load_starter()[:10])
    template = load_prompt("zero-shot")
    plan = RequestPlan(references, template, [], GenerationParams(seed=7), repeats=3)
    assert len(plan) == 30 and references.read == 0  # the length is known without building anything
    requests = iter(plan)
    first = [next(requests) for _ in range(4)]
    assert references.read == 2  # four requests: the three repeats of item 0 and one of item 1
    assert [(r.sample_id, r.repeat, r.params.seed) for r in first] == [
        (references.items[0].id, 0, 7),
        (references.items[0].id, 1, 8),
        (references.items[0].id, 2, 9),
        (references.items[1].id, 0, 7),
    ]
    assert first[0].messages == template.render(references.items[0]) and first[0].params == GenerationParams(seed=7)
    assert plan[5].sample_id == references.items[1].id and plan[5].repeat == 2 and plan[-1].repeat == 2


def test_a_resumed_plan_skips_the_finished_pairs():
    items = load_starter()[:4]
    done = {(items[0].id, 0), (items[0].id, 1), (items[2].id, 1)}
    plan = RequestPlan(items, load_prompt("zero-shot"), [], GenerationParams(), repeats=2, skip=done)
    expected = [(r.id, k) for r in items for k in range(2) if (r.id, k) not in done]
    assert [(r.sample_id, r.repeat) for r in plan] == expected and len(plan) == len(expected) == 5
    assert (plan[2].sample_id, plan[2].repeat) == expected[2]
    with pytest.raises(IndexError):
        plan[5]


def test_spooled_references_read_back_exactly_and_the_spool_goes_with_them(tmp_path):
    items = load_starter()[:25]
    spooled = spool_references(items, tmp_path)
    path = spooled.path
    assert path.parent == tmp_path and path.name.startswith(".references-")
    assert list(spooled) == items and len(spooled) == 25
    assert spooled[24] == items[24] and spooled[3:5] == items[3:5]
    assert list(spooled.ids()) == [r.id for r in items]
    assert list(ReferenceFile.open(path)) == items
    del spooled
    gc.collect()
    assert not path.exists()  # dropped before it became a run's references: removed
    kept = spool_references(items, tmp_path)
    taken = kept.take()
    assert taken is not None and kept.take() is None
    moved = tmp_path / "references.jsonl"
    taken.rename(moved)
    kept.relocate(moved)
    assert kept[0] == items[0]
    del kept
    gc.collect()
    assert moved.exists()  # handed over: it belongs to the run now


def test_a_bad_reference_line_names_its_file_and_line(tmp_path):
    path = tmp_path / "references.jsonl"
    good = json.dumps(load_starter()[0].model_dump(exclude_none=True), ensure_ascii=False)
    path.write_text(f'{good}\n\n{{"id": "x"}}\n', encoding="utf-8")
    references = ReferenceFile.open(path)
    assert len(references) == 2 and references[0] == load_starter()[0]
    with pytest.raises(InputError) as error:
        list(references)
    assert str(error.value).startswith(f"{path}:3")  # the line of the file, blank lines counted
