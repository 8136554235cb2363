"""The LP prover of mdmt refute (mdmt.bounds.refutation.shannon) against psitip, an independent implementation of the
same method (Yeung's ITIP): the same verdict on every inequality of mdmt.bounds.refutation.peer.INEQUALITIES (29, at
L = 3, 4, 5, Shannon-type and not).  Skipped where psitip is not installed (the optional extra ``peer-shannon``)."""

import pytest

from mdmt.bounds.refutation.peer import INEQUALITIES, ours, psitip_verdict

psitip = pytest.importorskip("psitip", reason="psitip is an optional peer (pip install psitip)")


def test_the_catalogue_covers_true_and_false_inequalities_at_three_lengths():
    assert len(INEQUALITIES) >= 20 and {L for _, L, _, _ in INEQUALITIES} == {3, 4, 5}
    assert {expected for *_, expected in INEQUALITIES} == {True, False}


@pytest.mark.integration
@pytest.mark.parametrize("name, L, terms, shannon", INEQUALITIES, ids=[e[0] for e in INEQUALITIES])
def test_mdmt_and_psitip_give_the_same_verdict(name, L, terms, shannon):
    assert ours(terms, L) == psitip_verdict(terms, L) == shannon, name
