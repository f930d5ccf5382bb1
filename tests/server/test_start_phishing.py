"""Phishing through player-started games (issue 34, 4): what a stranger types on /new (the
title, their name, their friends' names) never reaches another address's subject, nor its To
line, and in the body only quoted as theirs, with nothing in it that reads as a link; in every
mail /new and the invitations send, before and after the starter confirmed their address."""

from __future__ import annotations

import re

import pytest
from server import Mailbox, html_of, make_app, text_of
from test_start import INVITE, MANAGE, form, link_in, post_page

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

TITLE = "Your account is locked - call +1 555 0100 or visit evil.example"
STARTER = "Support team at http://evil.example"
FRIEND = "Visit www.evil.example now"
TYPED = (TITLE, STARTER, FRIEND, "555 0100", "locked", "Support team", "Visit")
LINKISH = re.compile(r"evil\.example|https?://evil|www\.evil")
VICTIM = "victim@example.org"


@pytest.fixture
def app(tmp_path):
    return make_app(tmp_path / "instance", GAMES_OPEN_CREATION=True,
                    GAMES_INVITATIONS_PER_ADDRESS=3, GAMES_INVITATIONS_PER_IP=9)


def addressed(message) -> str:
    return str(message["To"])


def check_no_phishing(message, typist: str | None = None) -> None:
    """Nothing typed in the subject or To of a mail to someone other than `typist`; in its
    body, the typed text is quoted and no part of it reads as a link."""
    subject, to = str(message["Subject"]), addressed(message)
    if typist is None or typist not in to:
        for words in TYPED:
            assert words not in subject, (subject, words)
    for words in TYPED:
        assert words not in to, (to, words)
    assert "<" not in to, f"addressed by a name: {to}"
    for body in (text_of(message), html_of(message)):
        assert not LINKISH.search(body), body
    html = html_of(message)
    assert not re.search(r'href="[^"]*evil', html)


def test_a_strangers_title_and_names_reach_no_subject_and_no_link(app, client):
    box = Mailbox(app)
    response = client.post("/new", data=form(
        client, title=TITLE, name=STARTER, email=VICTIM, name1=FRIEND, name2="Chiara"))
    assert response.status_code == 200, response.get_data(as_text=True)

    # The confirmation goes to an address the stranger typed: theirs or a victim's.
    (confirm,) = box.to(VICTIM)
    assert str(confirm["Subject"]) == "Confirm your address to start a game of Kardinal & König"
    check_no_phishing(confirm)
    text = text_of(confirm)
    assert 'Title: "Your account is locked - call +1 555 0100 or visit evil[.]example"' in text
    assert 'Name: "Support team at http[:]//evil[.]example"' in text
    assert 'Friend: "Visit www[.]evil[.]example now", bruno@example[.]org' in text
    assert "quoted as it was typed" in text
    html = html_of(confirm)
    assert html.count("<a ") == 1, "the confirmation link only"
    assert 'Title: "Your account is locked - call +1 555 0100 or visit evil[.]example"' in html

    # Confirmed: the invitations go to the friends' addresses.
    manage = link_in(box, VICTIM, MANAGE)
    assert post_page(client, f"/new/game/{manage}", f"/new/game/{manage}/confirm"
                     ).status_code == 303
    for friend in ("bruno@example.org", "chiara@example.org"):
        (invitation,) = box.to(friend)
        assert str(invitation["Subject"]) == "Invitation to a game of Kardinal & König"
        check_no_phishing(invitation)
        text = text_of(invitation)
        assert f"{VICTIM} invites you" in text
        assert 'gave their name as "Support team at http[:]//evil[.]example"' in text
        assert '"Visit www[.]evil[.]example now" (red)' in text
        assert html_of(invitation).count("<a ") == 1, "the invitation link only"

    # A friend declines: the news to the starter may name their own title, quoted.
    bruno = link_in(box, "bruno@example.org", INVITE)
    post_page(client, f"/invite/{bruno}", f"/invite/{bruno}/decline")
    news = box.to(VICTIM)[-1]
    assert str(news["Subject"]) == f"News of {TITLE}"  # the starter's own words, to them
    check_no_phishing(news, typist=VICTIM)

    # The starter calls it off: the friend still invited hears of it without their words.
    post_page(client, f"/new/game/{manage}", f"/new/game/{manage}/cancel")
    called_off = box.to("chiara@example.org")[-1]
    assert str(called_off["Subject"]) == "News of a game of Kardinal & König"
    check_no_phishing(called_off)
    assert f'{VICTIM}, who gave the name "Support team at http[:]//evil[.]example", called ' \
        "the game off" in text_of(called_off)

    for message in box.messages():  # and so every mail of it
        check_no_phishing(message, typist=VICTIM)
