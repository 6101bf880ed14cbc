"""Per-field classifiers and exact joint decoding under the codebook."""

from __future__ import annotations

import itertools

import numpy as np
from sklearn.linear_model import LogisticRegression

from verimod.models.baseline.features import CharNgramVectorizer
from verimod.models.baseline.fields import COMBOS, UNSEEN_LOGIT, fit_linear_softmax, joint_decode
from verimod.tasks.varm.codebook import DISCRETE_FIELDS, NO_CLEAR_TARGET, VOCABULARY, codebook_violations_of
from verimod.tasks.varm.starter import load_starter


def _values(code_row) -> tuple[str, ...]:
    return tuple(VOCABULARY[f][c] for f, c in zip(DISCRETE_FIELDS, code_row, strict=True))


def _consistent(values: tuple[str, ...]) -> bool:
    target = NO_CLEAR_TARGET if values[0] == NO_CLEAR_TARGET else "某人"
    return not codebook_violations_of((target, *values))


def test_combos_are_exactly_the_consistent_combinations():
    every = list(itertools.product(*(VOCABULARY[f] for f in DISCRETE_FIELDS)))
    expected = {v for v in every if _consistent(v)}
    assert {_values(row) for row in COMBOS} == expected
    assert len(COMBOS) == 50  # (2×2 + 1) referent combinations × (6 harmful + 4 non-harmful)


def _log(probabilities: dict[str, float], field: str) -> np.ndarray:
    return np.log(np.array([[probabilities.get(v, 1e-9) for v in VOCABULARY[field]]]))


def test_hand_made_case_picks_the_best_consistent_record():
    # Field argmaxes: harmful + non_attack + quote_or_report: inconsistent twice over.
    probs = {
        "target_type": {"single": 0.6, "group": 0.3, NO_CLEAR_TARGET: 0.1},
        "target_explicitness": {"explicit": 0.2, "implicit": 0.1, NO_CLEAR_TARGET: 0.7},
        "stance": {"attack_or_endorse": 0.3, "oppose_attack": 0.05, "quote_or_report": 0.6, "neutral_mention": 0.05},
        "label": {"harmful": 0.55, "non_harmful": 0.45},
        "category": {"non_attack": 0.5, "gender": 0.3, "general_abuse": 0.2},
    }
    log_probs = [_log(probs[f], f) for f in DISCRETE_FIELDS]
    chosen = _values(COMBOS[joint_decode(log_probs)[0]])
    # Referent: single+explicit 0.12 > nct+nct 0.07 > single+implicit 0.06.
    # Decision: non_harmful+non_attack+quote 0.45·0.5·0.6 = 0.135 > harmful+gender+attack 0.55·0.3·0.3 = 0.0495.
    assert chosen == ("single", "explicit", "quote_or_report", "non_harmful", "non_attack")
    # Forbid an explicit target (no span in the text): nct+nct wins the referent part.
    allowed = np.array([[VOCABULARY["target_explicitness"][row[1]] != "explicit" for row in COMBOS]])
    chosen = _values(COMBOS[joint_decode(log_probs, allowed)[0]])
    assert chosen[:2] == (NO_CLEAR_TARGET, NO_CLEAR_TARGET)


def test_joint_decoding_equals_brute_force_on_random_probabilities():
    rng = np.random.default_rng(7)
    n = 200
    log_probs = []
    for f in DISCRETE_FIELDS:
        p = rng.dirichlet(np.ones(len(VOCABULARY[f])) * 0.5, size=n)
        log_probs.append(np.log(p))
    chosen = joint_decode(log_probs)
    for row in range(n):
        best, best_score = None, -np.inf
        for codes in itertools.product(*(range(len(VOCABULARY[f])) for f in DISCRETE_FIELDS)):
            if not _consistent(_values(codes)):
                continue
            score = sum(log_probs[k][row, c] for k, c in enumerate(codes))
            if score > best_score:
                best, best_score = codes, score
        assert tuple(COMBOS[chosen[row]]) == best


def test_linear_softmax_matches_sklearn_probabilities():
    references = load_starter("train")
    texts = [r.text for r in references]
    rows = CharNgramVectorizer.fit(texts, 1, 2).transform(texts)
    y = [r.stance for r in references]
    ours = fit_linear_softmax("stance", rows, y, c=1.0)
    sk = LogisticRegression(C=1.0, max_iter=2000, tol=1e-5).fit(rows, np.asarray(y))
    expected = sk.predict_proba(rows)
    columns = [VOCABULARY["stance"].index(c) for c in sk.classes_]
    np.testing.assert_allclose(np.exp(ours.log_proba(rows))[:, columns], expected, rtol=1e-9, atol=1e-12)


def test_binary_and_single_class_fields_and_unseen_values():
    references = load_starter("train")
    texts = [r.text for r in references]
    rows = CharNgramVectorizer.fit(texts, 1, 2).transform(texts)
    label = fit_linear_softmax("label", rows, [r.label for r in references], c=1.0)
    sk = LogisticRegression(C=1.0, solver="liblinear", tol=1e-4, random_state=0)
    sk.fit(rows, [r.label for r in references])
    np.testing.assert_allclose(np.exp(label.log_proba(rows))[:, 0], sk.predict_proba(rows)[:, 0], rtol=1e-9)
    only = fit_linear_softmax("target_type", rows, ["group"] * len(texts), c=1.0)
    probs = np.exp(only.log_proba(rows))
    assert np.all(probs[:, VOCABULARY["target_type"].index("group")] > 0.999)
    assert np.all(np.isfinite(only.log_proba(rows)))
    assert only.bias[0] == UNSEEN_LOGIT


def test_chain_scores_and_label_first_decoding_by_brute_force():
    from verimod.models.baseline.fields import decode_records, marginals, record_scores

    rng = np.random.default_rng(3)
    n = 300
    log_probs = {}
    for f in DISCRETE_FIELDS:
        p = rng.dirichlet(np.ones(len(VOCABULARY[f])) * 0.7, size=n)
        log_probs[f] = np.log(p)
    allowed = rng.random((n, len(COMBOS))) > 0.2
    allowed[:, 0] = True
    scores = record_scores(log_probs)
    best, posterior = decode_records(scores, allowed)
    field_marginals = marginals(posterior)
    harmful_code = VOCABULARY["label"].index("harmful")
    for row in range(n):
        # the chain factorisation, written out per record
        expected = []
        for codes in COMBOS:
            t, e, s, lab, c = (int(x) for x in codes)
            value = log_probs["target_type"][row, t] + log_probs["target_explicitness"][row, e]
            value += log_probs["label"][row, lab]
            value += log_probs["category"][row, c] if lab == harmful_code else log_probs["stance"][row, s]
            expected.append(value)
        np.testing.assert_allclose(scores[row], expected)
        weights = np.where(allowed[row], np.exp(np.array(expected) - max(expected)), 0.0)
        weights /= weights.sum()
        np.testing.assert_allclose(posterior[row], weights, atol=1e-12)
        p_harmful = weights[COMBOS[:, 3] == harmful_code].sum()
        label = harmful_code if p_harmful >= 0.5 else 1 - harmful_code
        candidates = [k for k in range(len(COMBOS)) if allowed[row, k] and COMBOS[k, 3] == label]
        assert best[row] == max(candidates, key=lambda k: (expected[k], -k))
        assert abs(field_marginals[3][row, harmful_code] - p_harmful) < 1e-12


def test_a_spread_out_category_does_not_flip_a_probable_harmful_label():
    from verimod.models.baseline.fields import decode_records, record_scores

    uniform = {f: np.log(np.full((1, len(VOCABULARY[f])), 1 / len(VOCABULARY[f]))) for f in DISCRETE_FIELDS}
    uniform["label"] = np.log(np.array([[0.6, 0.4]]))
    category = np.full((1, 7), 1e-9)
    category[0, :6] = 1 / 6  # six attack categories, equally likely
    uniform["category"] = np.log(category)
    stance = np.array([[1e-9, 1e-9, 1.0, 1e-9]])  # quote_or_report, surely, if non-harmful
    uniform["stance"] = np.log(stance)
    best, _ = decode_records(record_scores(uniform))
    # the single most probable record is non-harmful (0.4 · 1 > 0.6 · 1/6), but P(harmful) = 0.6
    assert VOCABULARY["label"][COMBOS[best[0], 3]] == "harmful"
