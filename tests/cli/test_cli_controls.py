"""Control characters from data (ESC, BEL, CR, C1) never reach a terminal raw: `show`, error lines, notes.

The CLI's one output boundary (`io.process.escaped_streams`) writes them as `\\xHH` on stderr
always and on stdout when it is a terminal; stdout piped keeps the rendered bytes.
"""

from __future__ import annotations

import io
import json
import sys

import pytest

from tests.helpers.session_helpers import make_state
from workingset.cli.commands import main
from workingset.io.process import escape_controls

HOSTILE = "\x1b]0;owned\x07\x1b[2J\x9b31m\rX\x00\x7f"


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKINGSET_STORE", str(tmp_path / "store.sqlite3"))
    state = make_state()
    state["hypotheses"][0]["title"] = "bad " + HOSTILE + " title"
    path = tmp_path / "state.json"
    path.write_text(json.dumps(state))
    assert main(["init", "--state", str(path)]) == 0
    return state["analysis_id"] if "analysis_id" in state else "demo"


def _raw(text: str) -> bool:
    return any(c in text for c in "\x1b\x07\x9b\r\x00\x7f")


def test_an_error_line_escapes_control_characters(store, capsys):
    capsys.readouterr()
    for args in (
        ["show", "--analysis", "no" + HOSTILE],
        ["init", "--state", "/nonexistent/" + HOSTILE],
    ):
        assert main(args) == 2
        err = capsys.readouterr().err
        assert not _raw(err) and err.count("\n") == 1, err
    assert "\\x1b]0;owned\\x07" in err


def test_show_on_a_terminal_escapes_the_data(store, monkeypatch, capsys):
    capsys.readouterr()
    tty = Tty()
    monkeypatch.setattr(sys, "stdout", tty)
    assert main(["show", "--analysis", store]) == 0
    out = tty.getvalue()
    assert "bad " in out and not _raw(out) and "\\x1b[2J" in out


def test_piped_output_keeps_its_bytes_and_json_escapes_them(store, capsys):
    capsys.readouterr()
    assert main(["show", "--analysis", store]) == 0
    assert "\x1b[2J" in capsys.readouterr().out  # not a terminal: as rendered
    assert main(["show", "--analysis", store, "--json"]) == 0
    assert "\x1b" not in capsys.readouterr().out


def test_escape_controls_leaves_text_tabs_and_newlines():
    assert escape_controls("a\tb\nc é ✓") == "a\tb\nc é ✓"
    assert escape_controls("\x1b\x07\x9b") == "\\x1b\\x07\\x9b"
