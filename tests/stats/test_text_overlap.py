import pytest

from verimod.stats import char_f1, normalize_for_char_f1


def test_normalisation_drops_space_punctuation_symbols_and_folds_width_and_case():
    assert normalize_for_char_f1("  「小县城 公务员」！ ") == "小县城公务员"
    assert normalize_for_char_f1("ＡＢｃ＋＄€") == "abc"  # NFKC full width, lower case, symbols removed
    assert normalize_for_char_f1("Up主\u3000们…") == "up主们"


@pytest.mark.parametrize(
    ("pred", "ref", "expected"),
    [
        ("小县城公务员", "小县城公务员", 1.0),
        ("河南", "河南人", 0.8),  # common 2, P 1, R 2/3
        ("公务", "小县城公务员", 0.5),  # common 2, P 1, R 1/3
        ("县城公务员们", "小县城公务员", 5 / 6),  # common 5, P = R = 5/6
        ("东北人", "河南人", 1 / 3),  # common 1 (人), P = R = 1/3
        ("哈哈哈", "哈", 0.5),  # multiset: common 1, P 1/3, R 1 -> 0.5
        ("上海", "河南人", 0.0),
        ("！！", "河南人", 0.0),  # empty after normalisation on one side
        ("？", "。", 1.0),  # both empty after normalisation
    ],
)
def test_hand_computed_char_f1(pred, ref, expected):
    assert char_f1(pred, ref) == pytest.approx(expected)


def test_symmetric():
    assert char_f1("小县城公务员", "县城的公务员") == pytest.approx(char_f1("县城的公务员", "小县城公务员"))
