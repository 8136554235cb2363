"""Refutation over explicit laws: the random-support family, weight perturbations inside a task's support, exact
quantities of an explicit law (hand-derived values), and the length guard."""

from fractions import Fraction

import numpy as np
import pytest

from mdmt.bounds.refutation.certificate import exact_quantities, tables_of, with_tables
from mdmt.bounds.refutation.families import family
from mdmt.bounds.refutation.quantities import instance_quantities
from mdmt.constructions.languages.explicit import ExplicitLanguage
from mdmt.constructions.languages.spec import language_from_spec


def test_the_random_support_family_decodes_codes():
    fam = family("explicit:V=3,L=2,M=3")
    assert fam.n_symbols == 3 and fam.entries == 3 * 2 + 3 and fam.length == 2
    assert fam.language([0] * 9) == ExplicitLanguage([[0, 0]], n_symbols=3)  # all zeros: one sequence
    # tokens (2,1), (0,2), (2,1) with weight codes 1, 2, 3 (weights 1, 2, 4): the repeat adds its weight
    lang = fam.language([2, 1, 0, 2, 2, 1, 1, 2, 3])
    assert lang.support_.tolist() == [[0, 2], [2, 1]] and lang.weights_.tolist() == [2 / 7, 5 / 7]
    dropped = fam.language([2, 1, 0, 2, 1, 1, 0, 1, 0])  # weight code 0 drops a sequence
    assert dropped.support_.tolist() == [[0, 2]]


def test_perturbations_stay_inside_the_support():
    base = language_from_spec("task:shuffle:n=3")
    fam = family("task:shuffle:n=3")
    assert fam.n_symbols == 3 and fam.entries == 6 and fam.length == 3
    assert fam.language([0] * 6) == base  # the first instance is the task itself
    lang = fam.language([2, 0, 0, -7, 0, 0])  # one weight scaled by 2, one sequence dropped
    assert lang.n_sequences == 5 and set(map(tuple, lang.support_.tolist())) < set(map(tuple, base.support_.tolist()))
    np.testing.assert_allclose(sorted(lang.weights_), sorted([1 / 6, 1 / 6, 1 / 6, 1 / 6, 2 / 6]))
    assert with_tables(base, tables_of(base)) == base


def test_exact_quantities_of_an_explicit_law():
    # shuffle n=3 in one step: each position independently uniform on 3 items, right iff all distinct,
    # 3!/3^3 = 2/9: SER = 7/9; one token per step with the oracle: SER = 0
    lang = language_from_spec("task:shuffle:n=3")
    one = exact_quantities(lang, 3, "uniform", 1)
    assert one["SER"] == Fraction(7, 9)
    assert exact_quantities(lang, 3, "uniform", 3)["SER"] == 0
    assert instance_quantities(lang, 3, "uniform", 1)["SER"] == pytest.approx(7 / 9, abs=1e-12)


def test_a_search_over_explicit_laws(tmp_path):
    import mdmt

    res = mdmt.refute("SER <= 0", family="explicit:V=2,L=3,M=3", lengths=(3,), steps=(2,), processes=("uniform",),
                      budget=6)
    assert res.verdict == "certified violation"
    with pytest.raises(ValueError, match=r"holds explicit laws of length 3 only; search lengths 4 \(use --lengths 3\)"):
        mdmt.refute("SER <= 0", family="explicit:V=2,L=3,M=3", lengths=(4,), steps=(2,), budget=2)
    with pytest.raises(ValueError, match="family 'explicit:V=2,L=3': missing M"):
        family("explicit:V=2,L=3")
