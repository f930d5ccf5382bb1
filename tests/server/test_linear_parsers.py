"""Parsers of player text do work linear in the text (issue 34, point 1).

The work is counted, not timed: every regular expression the turn-file reader uses is replaced
by a proxy that records what each call is given. A call on one line of bounded patterns is
linear in that line; a call given many lines (a MULTILINE pattern with `^\\s*` run over the whole
text) is what made 32,000 newlines cost 8 s. The counter must grow in proportion to the text.
"""

from __future__ import annotations

import io
import re
import secrets

import pytest
from server import field, make_app, new_game

from pbem.services import quoting, turnfile


class Counting:
    """A compiled pattern that counts the characters it is handed, and which calls got more
    than one line."""

    def __init__(self, pattern: re.Pattern, tally: dict):
        self.pattern, self.tally = pattern, tally

    def _count(self, text: str) -> None:
        self.tally["chars"] += len(text)
        self.tally["calls"] += 1
        if "\n" in text or "\r" in text:
            self.tally["multiline"] += 1

    def __getattr__(self, name):
        method = getattr(self.pattern, name)
        if name not in ("match", "fullmatch", "search", "findall", "finditer", "sub", "split"):
            return method

        def counted(text, *args, **kwargs):
            self._count(text)
            return method(text, *args, **kwargs)
        return counted


def work(monkeypatch, reader, text: str) -> dict:
    tally = {"chars": 0, "calls": 0, "multiline": 0}
    monkeypatch.setattr(turnfile, "TURN_LINE", Counting(turnfile.TURN_LINE, tally))
    for name, value in vars(quoting).items():  # every pattern of the reply reader
        if isinstance(value, re.Pattern):
            monkeypatch.setattr(quoting, name, Counting(value, tally))
    reader(text)
    monkeypatch.undo()
    return tally


@pytest.mark.parametrize("reader", [turnfile.read, turnfile.read_talk, turnfile.turn_in],
                         ids=["read", "read_talk", "turn_in"])
@pytest.mark.parametrize("shape", ["\n", " \n", "Turn\n", "> Turn: 1\n", "\t\r\n"],
                         ids=["newlines", "blank", "turn-word", "quoted", "crlf"])
def test_reading_is_linear_in_the_lines(monkeypatch, reader, shape):
    """1,000 and 32,000 lines: the work grows 32-fold (within a line's slack), and no pattern
    is ever run over more than one line."""
    small = work(monkeypatch, reader, "Game: 1\n" + shape * 1000 + "draw deck\n")
    large = work(monkeypatch, reader, "Game: 1\n" + shape * 32000 + "draw deck\n")
    assert small["multiline"] == large["multiline"] == 0
    assert large["chars"] <= 32 * small["chars"] + 100
    assert large["calls"] <= 32 * small["calls"] + 10


def test_the_turn_line_is_found_as_before():
    """The first unquoted 'Turn:' line counts, with spaces and in any case; quoted ones do not."""
    assert turnfile.turn_in("> Turn: 9\n\n  turn:  4 (Move 17)  \nTurn: 5\n") == 17
    assert turnfile.turn_in("Turn: 12\n") == 12
    assert turnfile.turn_in("Turn: 12 and more\n") is None
    assert turnfile.read("\n" * 5000 + "Turn: 3\n=== ORDERS ===\ndraw deck\n").turn == 3


def test_a_turn_file_for_a_made_up_seat_is_not_read(tmp_path, monkeypatch):
    """A POST of a turn file to a link that opens no seat is refused before the file is read:
    the reader is never called, whatever the file holds."""
    app = make_app(tmp_path / "instance")
    _, tokens = new_game(app)
    client = app.test_client()
    page = client.get(f"/seat/{tokens[0]}").get_data(as_text=True)  # any page's CSRF token
    calls = []
    monkeypatch.setattr(turnfile, "read", lambda text: calls.append(text))
    response = client.post(f"/seat/{secrets.token_urlsafe(24)}/turnfile", data={
        "csrf_token": field(page, "csrf_token"),
        "turnfile": (io.BytesIO(b"\n" * 32000), "turn.txt")},
        content_type="multipart/form-data")
    assert response.status_code == 404
    assert calls == []
