"""The assembly of a GGUF file from PyPI pieces (tests/models/local_model.py), on fake pieces,
and the consistency of the two model specs with the extras that install their pieces."""

from __future__ import annotations

import hashlib
import re
import tomllib
import uuid
from pathlib import Path

import pytest

from tests.models.local_model import MEASURE_MODEL, TEST_MODEL, PiecedGguf, assemble_gguf

REPO = Path(__file__).resolve().parents[2]


def fake_pieces(root: Path, monkeypatch: pytest.MonkeyPatch, contents: list[bytes]) -> tuple[str, ...]:
    """Importable modules ``fakepiece<i>_<uuid>`` whose ``get_part_path()`` names a file with each content."""
    monkeypatch.syspath_prepend(str(root))
    names = []
    for index, content in enumerate(contents):
        name = f"fakepiece{index}_{uuid.uuid4().hex}"  # unique: imported modules stay in sys.modules
        package = root / name
        (package / "data").mkdir(parents=True)
        (package / "data" / "part.bin").write_bytes(content)
        (package / "__init__.py").write_text(
            "import os\n\ndef get_part_path():\n"
            "    return os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data', 'part.bin')\n"
        )
        names.append(name)
    return tuple(names)


def spec_of(modules: tuple[str, ...], whole: bytes, sha256: str | None = None) -> PiecedGguf:
    return PiecedGguf(
        name="fake.gguf",
        modules=modules,
        size=len(whole),
        sha256=sha256 or hashlib.sha256(whole).hexdigest(),
        extra="fake-extra",
    )


def test_the_pieces_are_concatenated_in_order_and_stamped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    contents = [b"GGUF" + bytes(range(200)), b"second piece" * 1000, b"end"]
    modules = fake_pieces(tmp_path / "pieces", monkeypatch, contents)
    cache = tmp_path / "cache"
    cache.mkdir()
    spec = spec_of(modules, b"".join(contents))
    path = assemble_gguf(cache, spec)
    assert path == cache / "fake.gguf"
    assert path.read_bytes() == b"".join(contents)
    assert (cache / "fake.gguf.verified").read_text().endswith(spec.sha256)
    assert sorted(p.name for p in cache.iterdir()) == ["fake.gguf", "fake.gguf.verified"]
    # a damaged cached file (same size, stamp no longer matching) is hashed, found wrong and rebuilt
    path.write_bytes(b"X" * spec.size)
    assert assemble_gguf(cache, spec).read_bytes() == b"".join(contents)


def test_pieces_with_the_wrong_hash_leave_nothing_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    contents = [b"GGUF", b"tampered"]
    modules = fake_pieces(tmp_path / "pieces", monkeypatch, contents)
    cache = tmp_path / "cache"
    cache.mkdir()
    spec = spec_of(modules, b"".join(contents), sha256="0" * 64)
    with pytest.raises(RuntimeError, match="fake-extra pieces assemble to 12 bytes"):
        assemble_gguf(cache, spec)
    assert list(cache.iterdir()) == []


@pytest.mark.parametrize("spec", [TEST_MODEL, MEASURE_MODEL], ids=lambda s: s.extra)
def test_each_spec_names_exactly_the_packages_its_extra_installs(spec: PiecedGguf) -> None:
    extras = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    pinned = [re.split(r"[=<>]", requirement)[0] for requirement in extras[spec.extra]]
    assert [name.replace("-", "_") for name in pinned] == list(spec.modules)
    assert re.fullmatch(r"[0-9a-f]{64}", spec.sha256) and spec.size > 0
