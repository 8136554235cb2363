"""mdmt.results.Result: the dict a command prints, with its tables as frames, CSV, columns and its figure.

The library functions return what the commands print: a curve, an atlas sweep and the adaptive studies
computed from Python equal the ``--json`` output of the command, number for number.
"""

from __future__ import annotations

import csv
import json
import math
import pickle

import numpy as np
import pytest

from mdmt.bounds import atlas_sweep, ser_curve, ser_study, ter_curve, ter_study
from mdmt.cli import main
from mdmt.results import Result


def _json_of(argv, capsys):
    capsys.readouterr()
    assert main(argv + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_result_is_the_dict_the_command_prints(capsys):
    res = ter_curve(3, 0.05, [64, 128], 8, steps=[4, 16])
    assert isinstance(res, dict) and isinstance(res, Result)
    printed = _json_of(["curve", "ter", "--n", "3", "--eps", "0.05", "--lengths", "64,128", "--steps", "4,16"], capsys)
    assert [r["chain_bound"] for r in printed["rows"]] == [r["chain_bound"] for r in res["rows"]]
    assert printed["min_steps"] == {str(k): v for k, v in res["min_steps"].items()}


def test_tables_by_hand(tmp_path):
    res = Result({"note": "x", "rows": [{"a": 1, "b": None}, {"a": 2.5, "b": [1, 2], "c": math.inf}]},
                 figure=None)
    assert res.columns() == ["a", "b", "c"]
    assert np.array_equal(res.column("a"), [1.0, 2.5])
    assert res.column("b").dtype == object
    c = res.column("c")
    assert math.isnan(c[0]) and c[1] == math.inf
    path = res.to_csv(tmp_path / "t.csv")
    with open(path, newline="") as fh:
        assert list(csv.reader(fh)) == [["a", "b", "c"], ["1", "", ""], ["2.5", "[1, 2]", "inf"]]
    with pytest.raises(ValueError, match="no column 'd'"):
        res.column("d")
    with pytest.raises(ValueError, match="no table 'x'"):
        res.to_csv(tmp_path / "u.csv", table="x")
    with pytest.raises(ValueError, match="no figure"):
        res.plot()
    with pytest.raises(ValueError, match="not a list of rows"):
        Result({"rows": 3})
    back = pickle.loads(pickle.dumps(res))
    assert back == res and back.tables == ("rows",) and isinstance(back, Result)


def test_to_frame_holds_the_rows():
    pd = pytest.importorskip("pandas")
    res = ser_curve(4, 64)
    frame = res.to_frame()
    assert isinstance(frame, pd.DataFrame) and len(frame) == len(res["rows"])
    assert list(frame.columns) == res.columns()
    assert np.array_equal(frame["oracle_ser"].to_numpy(), res.column("oracle_ser"))


def test_an_atlas_sweep_has_the_csv_rows_as_a_derived_table(tmp_path, capsys):
    sweep = atlas_sweep(["preset:2gram"], [3], [1, 2], "iid,confidence")
    assert "rows" not in sweep  # the JSON stays as the command prints it
    rows = sweep._table(None)
    assert [(r["language"], r["L"], r["N"], r["process"]) for r in rows] == [
        ("preset:2gram", 3, 1, "iid"), ("preset:2gram", 3, 1, "confidence"),
        ("preset:2gram", 3, 2, "iid"), ("preset:2gram", 3, 2, "confidence")]
    printed = _json_of(["atlas", "--language", "preset:2gram", "-L", "3", "-N", "1,2", "--processes",
                        "iid,confidence"], capsys)
    assert [r["kl"] for i in printed["instances"] for r in i["rows"]] == [r["kl"] for r in rows]
    back = pickle.loads(pickle.dumps(sweep))
    assert back.columns()[:3] == ["language", "L", "N"]
    assert back.plot().axes  # one panel per instance


def test_the_adaptive_studies_from_python_equal_the_commands(capsys):
    ser = ser_study([3], [2], ["iid", "stride"], num=40, seed=1, curve_length=6)
    printed = _json_of(["adaptive", "ser", "--interval-lengths", "3", "--intervals", "2", "--policies", "iid,stride",
                        "--num", "40", "--seed", "1", "--curve-length", "6", "--no-progress"], capsys)
    assert printed["min_steps"] == json.loads(json.dumps(ser["min_steps"]))
    assert ser.tables == ("curves", "min_steps") and len(ser.to_frame("min_steps")) == 2
    ter = ter_study("preset:2gram-ter", [8], ["iid"], num=16, seed=2)
    printed = _json_of(["adaptive", "ter", "--language", "preset:2gram-ter", "--lengths", "8", "--policies", "iid",
                        "--num", "16", "--seed", "2", "--no-progress"], capsys)
    assert printed["rows"] == json.loads(json.dumps(ter["rows"]))
    assert ter.plot().axes and ser.plot().axes
