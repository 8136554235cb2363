"""One command grammar: every subcommand's flags use the shared names with their one meaning (mdmt/commands/_common.py)."""

import argparse

import pytest

from mdmt.cli import COMMANDS, build_parser

FORBIDDEN = {  # names that used to mean something else somewhere, or two things
    "--preset": "a language is --language preset:NAME, an architecture is --model",
    "--samples": "how many sequences is --num",
    "--n-train": "how many sequences is --num",
    "--n-val": "validation sequences are --num-val",
    "--val-size": "validation sequences are --num-val",
    "--val-num": "validation sequences are --num-val",
    "--language-seed": "the seed of a preset is part of its SPEC, preset:NAME:SEED",
}
TAKES_LANGUAGE = {"score", "exact", "sample", "data", "train", "language"}


def _leaf_parsers():
    """(name, parser) for every subcommand, and for both kinds of `mdmt curve`."""
    root = build_parser()
    sub = next(a for a in root._actions if isinstance(a, argparse._SubParsersAction))
    for name, parser in sub.choices.items():
        inner = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if inner:
            for kind, p in inner[0].choices.items():
                yield f"{name} {kind}", p
        else:
            yield name, parser


LEAVES = list(_leaf_parsers())


def _options(parser) -> dict:
    return {s: a for a in parser._actions for s in a.option_strings}


def test_every_command_is_registered_and_documented():
    names = {n.split()[0] for n, _ in LEAVES}
    assert names == set(COMMANDS)
    for name, parser in LEAVES:
        assert parser.description, name
        for action in parser._actions:
            if action.option_strings and action.dest != "help":
                assert action.help, f"{name} {action.option_strings} has no help"


@pytest.mark.parametrize("name, parser", LEAVES, ids=[n for n, _ in LEAVES])
def test_shared_names_have_one_meaning(name, parser):
    opts = _options(parser)
    for flag, why in FORBIDDEN.items():
        assert flag not in opts, f"mdmt {name} {flag}: {why}"
    assert "--json" in opts, f"mdmt {name} has no --json"
    if name.split()[0] in TAKES_LANGUAGE:
        assert "--language" in opts and opts["--language"].metavar == "SPEC", name
    if "--language" in opts:
        assert "preset:NAME[:SEED]" in opts["--language"].help and "interval:l" in opts["--language"].help
    if "--steps" in opts:
        assert opts["--steps"] is opts.get("-N"), f"{name}: -N is --steps"
        assert "sampling steps N" in opts["--steps"].help, name
    if "-N" in opts:
        assert opts["-N"] is opts["--steps"]
    if "--train-steps" in opts:
        assert "steps" in opts["--train-steps"].help and "sampling" not in opts["--train-steps"].help
    if "-L" in opts:
        assert opts["-L"] is opts["--length"] and "length L" in opts["--length"].help
    if "--model" in opts:
        assert tuple(opts["--model"].choices) == ("tiny", "paper"), name
    if "--num" in opts:
        assert opts["--num"].help.startswith("number of"), name
    if "--schedule" in opts and opts["--schedule"].choices is None:
        assert "warmstart[:FIRST]" in opts["--schedule"].help and "p1,p2,..." in opts["--schedule"].help
    if "--eps" in opts:  # only Theorem 4.2's epsilon is called --eps
        assert name == "curve ter" and "Theorem 4.2" in opts["--eps"].help


def test_inapplicable_flags_are_errors_not_ignored(capsys):
    from mdmt.cli import main

    assert main(["curve", "ser", "--lengths", "100,200"]) == 2
    assert "unrecognized arguments" in capsys.readouterr().err
    assert main(["curve", "ter", "--length", "1024"]) == 2  # no prefix matching of --lengths either
    assert "unrecognized arguments" in capsys.readouterr().err
    assert main(["curve", "ter", "--interval-length", "5"]) == 2
    capsys.readouterr()


@pytest.mark.parametrize("name, parser", LEAVES, ids=[n for n, _ in LEAVES])
def test_force_names_only_outputs_the_command_has(name, parser):
    import re

    opts = _options(parser)
    if "--force" in opts:
        named = re.findall(r"--[a-z-]+", opts["--force"].help)
        assert named and all(flag in opts for flag in named), (name, opts["--force"].help)


@pytest.mark.parametrize("argv, prefix", [(["curve", "ter", "--bogus", "8"], "mdmt curve: error: "),
                                          (["exact", "--bogus"], "mdmt exact: error: "),
                                          (["refute", "--claim", "KL <= TC", "extra"], "mdmt refute: error: "),
                                          (["bogus"], "mdmt: error: ")])
def test_usage_errors_are_named_after_the_command(argv, prefix, capsys):
    from mdmt.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(prefix) and err.count("\n") == 1, err


@pytest.mark.parametrize("argv", [["exact", "--language", "interval:3", "-L", "4", "-N", "2"],
                                  ["sample", "--language", "interval:3", "-L", "7", "-N", "2", "--num", "4"],
                                  ["atlas", "--language", "interval:3", "-L", "3,4", "-N", "2"],
                                  ["adaptive", "exact", "--language", "interval:3", "-L", "2", "-N", "2"]])
def test_the_interval_length_rule_holds_wherever_interval_l_is_accepted(argv, capsys):
    from mdmt.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "is not a multiple of the interval length l = 3 of --language interval:3" in err and err.count("\n") == 1


@pytest.mark.parametrize("name, parser", LEAVES, ids=[n for n, _ in LEAVES])
def test_every_help_ends_with_examples_that_parse(name, parser):
    """Each subcommand's --help has an Examples section; every example is a command line of that subcommand that
    the parser accepts (a comment after # is the reader's, not the shell's)."""
    import shlex

    assert parser.epilog and parser.epilog.startswith("Examples:\n"), name
    assert "Examples:" in parser.format_help()
    lines = [ln.strip() for ln in parser.epilog.splitlines()[1:]]
    assert lines
    for line in lines:
        argv = shlex.split(line.split("   #")[0])
        assert argv[0] == "mdmt" and " ".join(argv[1:1 + len(name.split())]) == name, line
        build_parser().parse_args(argv[1:])  # exits (a failed test) on an argument the command does not take


def test_curve_ter_has_a_steps_grid_and_shows_theorem_42_on_its_default_one(capsys):
    """By default the grid holds the Theorem 4.2 step count (5335 for n = 3, eps = 0.05), so its bound is finite on
    that row; --steps gives the grid."""
    import json

    from mdmt.cli import main

    assert main(["curve", "ter", "--n", "3", "--eps", "0.05", "--lengths", "256", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    n42 = out["theorem42_steps"]
    assert [r["theorem42_bound"] for r in out["rows"] if r["N"] == n42] == [out["target"]]
    assert main(["curve", "ter", "--lengths", "256", "-N", "8,6000", "--json"]) == 0
    assert [r["N"] for r in json.loads(capsys.readouterr().out)["rows"]] == [8, 6000]


def test_curve_ter_takes_the_schedule_grammar(capsys):
    """warmstart:FIRST with FIRST = --eps is Theorem 4.2's warmstart (the same chain bounds); another schedule SPEC
    gives its own curve; explicit reveal probabilities (which fix N) are refused in one line."""
    import json

    from mdmt.cli import main

    def rows(*extra):
        assert main(["curve", "ter", "--eps", "0.05", "--lengths", "256", "-N", "8,64", "--json", *extra]) == 0
        return json.loads(capsys.readouterr().out)["rows"]

    bare, spec = rows(), rows("--schedule", "warmstart:0.05")
    assert [r["chain_bound"] for r in bare] == [r["chain_bound"] for r in spec]
    assert [r["chain_bound"] for r in rows("--schedule", "loglinear")] != [r["chain_bound"] for r in bare]
    assert main(["curve", "ter", "--schedule", "0.5,0.5"]) == 2
    assert "explicit reveal probabilities fix N" in capsys.readouterr().err


def test_a_text_table_writes_each_column_in_one_number_format():
    """format_table by hand: a column within five decades in fixed point with its largest value's 6 significant
    digits; a wider one (or one below 1e-4) all in scientific notation; ints, None, inf and lists as stated."""
    from mdmt.commands._common import column_format, format_table

    fixed = column_format([1.49493, 0.000291846, 0.5])
    assert [fixed(v) for v in (1.49493, 0.000291846, 0.5)] == ["1.49493", "0.00029", "0.50000"]
    sci = column_format([1.49493, 9.9995e-05])
    assert [sci(v) for v in (1.49493, 9.9995e-05)] == ["1.49493e+00", "9.99950e-05"]
    big = column_format([123456.0, 2.5])
    assert big(2.5) == "2" and big(123456.0) == "123456"  # 6 significant digits of the largest value
    mixed = column_format([3, None, float("inf"), -float("inf"), [0.25, 0.5]])
    assert [mixed(v) for v in (3, None, float("inf"), -float("inf"), [0.25, 0.5])] == [
        "3", "-", "inf", "-inf", "[0.250000, 0.500000]"]
    table = format_table(["a", "b"], [[1, 0.5], [2, 0.000291846]], marks=[["", ""], ["", " !"]]).splitlines()
    assert table[2].split() == ["1", "0.500000"] and table[3].split() == ["2", "0.000292", "!"]
