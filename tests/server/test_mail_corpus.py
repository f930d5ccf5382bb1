"""Replies as mail programs write them (issue 41): a corpus of 220 replies in 25 shapes of 15
mail programs and 19 languages (tests/mail_corpus.py), answering the real mails of real games
of both kinds, read through `handle_incoming` with the envelope recipient as `pbem
ingest-mail` hands it (every tenth through the command itself); and what the server writes is
never read as an order, however it is quoted."""

from __future__ import annotations

import re
from email import policy
from email.parser import BytesParser

import mail_corpus
import pytest
from server import Mailbox, game_state, make_app, new_game, text_of

from pbem.mailin.inbox import Handled, handle_incoming
from pbem.mailin.reading import read_mail
from pbem.services import turnfile

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

DOMAIN = "games.example.org"
CORPUS = 220


@pytest.fixture
def app(tmp_path):
    return make_app(tmp_path / "instance", MAIL_REPLY_DOMAIN=DOMAIN, MAIL_BOARD_PICTURE=False)


def _ingest(app, command_every: int = 0):
    """The pipe's path: `handle_incoming` with the envelope recipient; every
    `command_every`th mail through the `pbem ingest-mail` command itself."""
    count = [0]

    def ingest(raw: bytes, recipient: str) -> Handled:
        count[0] += 1
        if command_every and count[0] % command_every == 0:
            result = app.test_cli_runner().invoke(
                args=["ingest-mail", "--recipient", recipient], input=raw)
            assert result.exit_code == 0, result.output
            outcome, _, detail = result.output.strip().partition(": ")
            return Handled(outcome, detail)
        with app.app_context():
            return handle_incoming(raw, [recipient])
    return ingest


@pytest.mark.parametrize("kind", [0, 1], ids=["kardinal-koenig", "knights-castles"])
def test_the_corpus_is_applied_as_written(app, database, kind):
    """At least 99% of the replies are applied exactly as written; none plays a move its
    writer did not write; no signature or attribution line raises an alarm. The whole corpus
    on SQLite; on PostgreSQL, whose part is the storing, not the reading, its first 50 (every
    shape), to keep the suite quick."""
    club = mail_corpus.Club(app, _ingest(app, command_every=10))
    cases = mail_corpus.cases(CORPUS if database == "sqlite" else len(mail_corpus.SHAPES) * 2)
    results = [club.play(i, *case) for i, case in enumerate(cases) if i % 2 == kind]
    assert len({mail_corpus.CLIENTS[r.shape] for r in results}) >= 12
    assert len({r.lang for r in results}) >= 12
    figures = mail_corpus.figures(results)["all"]
    misread = [(r.shape, r.lang, r.placement, r.orders, r.played, r.detail)
               for r in results if r.outcome != "exact"]
    assert figures["wrong"] == 0, misread
    assert figures["alarm"] == 0, misread
    assert figures["exact"] >= 0.99 * len(results), misread


def _raw(shape: str, lang: str, original: mail_corpus.Original, orders: list[str],
         placement: str = "top") -> bytes:
    return mail_corpus.reply(shape, lang, original, orders, placement, 0)


def _original(message, file_name="turn.txt") -> mail_corpus.Original:
    from email.utils import parseaddr
    return mail_corpus.original_of(message, parseaddr(str(message["Reply-To"]))[1], file_name)


def _parsed(raw: bytes):
    return BytesParser(policy=policy.default).parsebytes(raw)


@pytest.mark.parametrize("lang", sorted(mail_corpus.LANGUAGES))
def test_each_languages_attribution_header_and_signatures_are_not_the_writers(lang):
    """Attribution lines (one line or wrapped), Outlook's header block and separator, and the
    signatures of phones and programs, in each language, are never the writer's lines."""
    words = mail_corpus.LANGUAGES[lang]
    name, addr = "Board games by post", "judge@pbem.localhost"
    for template in (words.gmail, words.apple, words.thunderbird, words.yahoo):
        line = template.format(name=name, addr=addr)
        cut = line.rfind(" ", 0, 40)
        for text in (line, f"{line[:cut]}\n{line[cut + 1:]}"):
            own = turnfile.own_lines(f"draw deck\n\n{text}\n\n> Hello\n")
            assert [line for line in own if line] == ["draw deck"], text
    for signature in (words.iphone, words.android, words.outlook_mobile, words.windows):
        assert turnfile.read(f"draw deck\n\n{signature}\n").lines == ["draw deck"], signature
    header = "\n".join(f"{word}: x" for word in words.outlook)
    for head in (header, f"-----{words.original}-----\n{header}",
                 f"*{words.outlook[0]}:* x\n*{words.outlook[1]}:* y",
                 f"{words.outlook[0]}:\nAnna\n{words.outlook[1]}: y"):
        assert turnfile.read(f"draw deck\n\n{head}\n\nexchange R\n").lines == ["draw deck"], head


def test_html_with_an_xml_declaration_is_read(app):
    """Old Hotmail's HTML begins with an XML declaration: lxml gets bytes and reads it."""
    new_game(app, 3, "u0", start=0)
    invitation = [m for m in Mailbox(app).to("p0@example.org") if m["Reply-To"]][-1]
    raw = _raw("hotmail-xml", "en", _original(invitation), ["draw deck"])
    assert b"<?xml version" in raw
    reading = read_mail(_parsed(raw))
    assert (reading.part, reading.orders.lines) == ("html", ["draw deck"])


def test_the_html_part_is_read_when_the_text_part_is_only_the_quote(app):
    new_game(app, 3, "u0", start=0)
    invitation = [m for m in Mailbox(app).to("p0@example.org") if m["Reply-To"]][-1]
    reading = read_mail(_parsed(_raw("webmail-html", "de", _original(invitation),
                                     ["draw deck"])))
    assert (reading.part, reading.orders.lines) == ("html", ["draw deck"])


@pytest.mark.parametrize("shape", ["attached", "attached-octet", "attached-inline"])
def test_an_attached_turn_file_is_read_and_its_note_is_not(app, shape):
    new_game(app, 3, "u0", start=0)
    invitation = [m for m in Mailbox(app).to("p0@example.org") if m["Reply-To"]][-1]
    reading = read_mail(_parsed(_raw(shape, "fr", _original(invitation, "kk-game1.txt"),
                                     ["draw deck"], "file")))
    assert (reading.part, reading.orders.lines) == ("attachment", ["draw deck"])
    assert reading.name == ("orders.dat" if shape == "attached-octet" else "kk-game1.txt")


def test_comment_lines_survive_a_re_wrap_at_72_characters(app):
    """Every comment line under the ORDERS line is short enough that a program re-wrapping the
    quote at 72 characters, after '> ' or '>> ', leaves it whole: no continuation without '#'."""
    new_game(app, 3, "u0", start=0)
    invitation = [m for m in Mailbox(app).to("p0@example.org") if m["Reply-To"]][-1]
    text = text_of(invitation)
    below = text[text.index(turnfile.ORDERS_LINE):].splitlines()[1:]
    assert below and all(len(line) <= turnfile.COMMENT_WIDTH for line in below)
    for width, prefix in ((72, "> "), (72, ">> "), (72, "")):
        wrapped = mail_corpus._wrap(text.splitlines(), width, prefix)
        assert turnfile.read("\n".join(wrapped)).lines == []


def test_nothing_the_server_wrote_is_read_as_an_order(app):
    """The answer to an illegal order lists the legal moves and quotes the player's lines; a
    reply that pastes that answer without '>' and without a header over it, writing nothing of
    its own, plays none of them: it is refused, and the refusal does not tell the player to
    write under the ORDERS line."""
    new_game(app, 3, "u0", start=0)
    box = Mailbox(app)
    invitation = [m for m in box.to("p0@example.org") if m["Reply-To"]][-1]
    ingest = _ingest(app)
    original = _original(invitation)
    handled = ingest(_raw("thunderbird", "en", original, ["R Aragon: Nowhere"]),
                     original.reply_to)
    assert handled.outcome == "refused"
    answer = [m for m in box.to("p0@example.org") if m["Reply-To"]][-1]
    answer_text = text_of(answer)
    assert "What you could play now:" in answer_text
    assert re.search(r"^#   \S", answer_text, re.MULTILINE)
    before = game_state(app)[0].turn
    # The answer's text pasted as it is under an empty top, as a program quoting without '>'
    # does once its header block is deleted.
    from email.message import EmailMessage
    message = EmailMessage()
    message["From"], message["To"] = "p0@example.org", _original(answer).reply_to
    message["Subject"], message["Message-ID"] = "Re: x", "<pasted@example.org>"
    message.set_content("\n" + answer_text)
    handled = ingest(message.as_bytes(), _original(answer).reply_to)
    assert handled.outcome == "refused", handled
    assert game_state(app)[0].turn == before
    refusal = text_of([m for m in box.to("p0@example.org") if m["Reply-To"]][-1])
    assert "ORDERS line" not in refusal


def test_a_refusal_says_which_lines_were_read_from_which_part(app):
    """Part of the orders applied: the answer quotes each line taken as the player's, with
    what was done with it, and names the part of the mail (here the attached file)."""
    new_game(app, 3, "u0", start=0)
    box = Mailbox(app)
    invitation = [m for m in box.to("p0@example.org") if m["Reply-To"]][-1]
    _, state = game_state(app)
    from pbem.games import choices, rules_for
    rules = rules_for("kardinal-koenig")
    with app.app_context():
        first = choices(rules, state)[0]
    original = _original(invitation, "kk-game1-turn1-yellow.txt")
    raw = _raw("attached", "en", original, [first, "fly to the moon", "draw deck"], "file")
    handled = _ingest(app)(raw, original.reply_to)
    assert handled.outcome == "partly", handled
    answer = " ".join(text_of([m for m in box.to("p0@example.org")
                               if m["Reply-To"]][-1]).split())
    assert "the attached file kk-game1-turn1-yellow.txt" in answer
    assert f"# {first} (applied)" in answer
    assert "# fly to the moon (not applied)" in answer
    assert "# draw deck (not tried, as a line before it failed)" in answer


def test_a_broken_attachment_leaves_the_text_read():
    """An attachment whose charset is unknown is no turn file, and the body is still read."""
    from email.message import EmailMessage
    message = EmailMessage()
    message.set_content("draw deck\n")
    message.add_attachment(f"{turnfile.ORDERS_LINE}\nexchange R\n", subtype="plain",
                           filename="turn.txt")
    next(message.iter_attachments()).set_param("charset", "x-no-such-charset")
    reading = read_mail(_parsed(message.as_bytes()))
    assert (reading.part, reading.orders.lines) == ("text", ["draw deck"])
