"""Annotation files that are not the text their builder expects are refused in one line naming the
file, and for a CSV the row (issue 39: a CREPE negatives field over the csv module's limit, a
VL-CheckList file saved as UTF-16)."""

from __future__ import annotations

import csv
import json

import pytest

from vlprobe.builders import AnnotationError, read_json
from vlprobe.builders.crepe import parse_csv


def test_a_csv_field_over_the_csv_limit_names_the_file_and_row():
    big = "x" * (csv.field_size_limit() + 10)
    data = ("caption,hard_negs,image_id\n" "a cat,\"['a dog']\",1\n" f"a cat,\"['{big}']\",2\n").encode()
    with pytest.raises(AnnotationError, match=r"^prod_atom_4\.csv row 1: not readable as CSV: field larger"):
        parse_csv(data, "prod_atom_4.csv")
    assert parse_csv(data.split(b"\n", 2)[0] + b"\n" + data.split(b"\n")[1] + b"\n", "f") == [
        {"caption": "a cat", "hard_negs": "['a dog']", "image_id": "1"}]


def test_a_csv_that_is_not_utf8_names_the_file():
    with pytest.raises(AnnotationError, match=r"^f\.csv: not UTF-8 text"):
        parse_csv("caption\ncafé\n".encode("latin-1"), "f.csv")


def test_a_utf16_json_file_names_the_file(tmp_path):
    path = tmp_path / "spatial.json"
    path.write_bytes(json.dumps([["a.jpg", {"POS": ["a"], "NEG": ["b"]}]]).encode("utf-16"))
    assert path.read_bytes()[:2] == b"\xff\xfe"
    with pytest.raises(AnnotationError, match=rf"^{path}: not UTF-8 text"):
        read_json(path, "VL-CheckList", list, "a JSON list", "hint")
