"""The language SPEC grammar shared by every command: preset:NAME[:SEED], interval:l, or a file."""

import pytest

from mdmt.constructions.languages import interval_hmm, preset, save_language
from mdmt.constructions.languages.spec import canonical_spec, interval_length_of, language_from_spec


def test_each_form_names_its_language(tmp_path):
    assert language_from_spec("preset:3gram") == preset("3gram", 0)
    assert language_from_spec("preset:3gram:7") == preset("3gram", 7)
    assert language_from_spec("interval:4") == interval_hmm(4)
    path = tmp_path / "l.json"
    save_language(preset("hmm", 2), path)
    assert language_from_spec(str(path)) == preset("hmm", 2)


def test_canonical_form():
    assert canonical_spec("preset:2gram-ter") == "preset:2gram-ter:0" == canonical_spec(" preset:2gram-ter:0 ")
    assert canonical_spec("interval:5") == "interval:5"
    assert interval_length_of("interval:5") == 5 and interval_length_of("preset:hmm") is None


@pytest.mark.parametrize("spec, message", [
    ("preset:7gram", "unknown preset '7gram'; valid presets: 2gram"),
    ("preset:interval-3", "the counterexample is interval:3"),
    ("preset:hmm:-1", "seed '-1' is not a non-negative integer"),
    ("preset:hmm:1:2", "expected preset:NAME or preset:NAME:SEED"),
    ("interval:x", "must be an integer"),
    ("interval:1", "interval length l = 1 must be in 2..6"),
    ("interval:9", "interval length l = 9 must be in 2..6"),
    ("3gram", "did you mean preset:3gram?"),
    ("interval-4", "did you mean interval:4?"),
    ("nothing.json", "'nothing.json': no such file"),
    ("", "expected preset:NAME"),
])
def test_bad_specs_name_the_spec(spec, message):
    with pytest.raises(ValueError, match=message.replace("?", r"\?").replace("(", r"\(")):
        language_from_spec(spec)
