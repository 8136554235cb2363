"""The SER and TER studies of bounds/studies/adaptive.py: smallest step counts and their certificates."""

import pytest

from mdmt.bounds.studies.adaptive import min_steps_ser, min_steps_ter, ser_point
from mdmt.constructions.languages import random_ngram
from mdmt.constructions.reverse.interval_closed_forms import oracle_ser
from mdmt.constructions.reverse.schedules import reveal_probabilities


def test_min_steps_ser_closed_forms():
    l, L = 3, 12
    r = min_steps_ser(l, L, "iid", 0.1)
    N = r["steps"]
    assert oracle_ser(l, L, reveal_probabilities("linear", N)) <= 0.1 < oracle_ser(l, L, reveal_probabilities("linear", N - 1))
    assert r["method"] == "closed form" and r["theorem44_lower"] <= r["ser"] + 1e-12
    assert min_steps_ser(l, L, "stride", 0.1)["steps"] == l  # N = l for every L
    assert min_steps_ser(l, 10 * L, "stride", 0.1)["steps"] == l
    t = min_steps_ser(l, L, "threshold:0.5", 0.1)
    assert t["reached"] and t["ser"] == 0 and t["nfe"] == L and t["method"].startswith("exact")
    assert not min_steps_ser(l, L, "threshold:0.3", 0.1, num=200)["reached"]


def test_min_steps_ser_monte_carlo_point_and_interval():
    r = min_steps_ser(3, 12, "confidence", 0.1, num=400)
    assert r["reached"] and r["ser"] <= 0.1 and r["ci"][0] <= r["ser"] <= r["ci"][1]
    assert ser_point(3, 12, "confidence", r["steps"] - 1, num=400)["ser"] > 0.1


def test_min_steps_ter():
    lang = random_ngram(2, 3, 2.0, 0.0, seed=0)
    r = min_steps_ter(lang, 8, "stride", target=10.0, num=20)
    assert r["steps"] == 1 and r["ci"][1] <= 10.0
    r = min_steps_ter(lang, 8, "threshold", target=1e-9, num=20)  # one token per step: KL = 0 at NFE = L
    assert r["parameter"] is not None and r["nfe"] == pytest.approx(8)
