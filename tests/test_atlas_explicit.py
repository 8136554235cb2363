"""The atlas on explicit laws: exact KL and SER of a task from the (V+1)^L tables (small L), against values
derived by hand."""

import json
import math

from mdmt.cli import main


def test_atlas_on_shuffle_four_in_two_steps(capsys):
    # uniform process, sizes (2, 2) at random positions, oracle marginals: the first two positions are independent
    # uniform items (distinct w.p. 3/4), the last two independent uniform among the 2 items left (distinct w.p.
    # 1/2): every permutation gets p(x) = (1/4)^2 (1/2)^2 = 1/64 whatever the positions, so
    # SER = 1 - 24/64 = 5/8 and KL = log((1/24) / (1/64)) = log(8/3); accuracy 3/8 = 2^(-KL in bits)
    assert main(["atlas", "--language", "task:shuffle:n=4", "-L", "4", "--steps", "2", "--processes", "uniform",
                 "--json"]) == 0
    row = json.loads(capsys.readouterr().out)["rows"][0]
    assert math.isclose(row["ser"], 5 / 8, abs_tol=1e-12)
    assert math.isclose(row["kl"], math.log(8 / 3), rel_tol=1e-12)
    assert math.isclose(2 ** (-row["kl"] / math.log(2)), 1 - row["ser"], rel_tol=1e-12)


def test_atlas_refuses_another_length(capsys):
    assert main(["atlas", "--language", "task:shuffle:n=4", "-L", "5", "--steps", "4"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "L = 5: this explicit law holds sequences of length 4 only" in err
