"""What each mail says: invitation, your turn, a turn by someone else, digest, final result."""

from datetime import timedelta

from server import field, game_state, html_of, new_game, play_moves, text_of, token_in

from pbem.db import utcnow
from pbem.outbox import deliver_all_due


def _subjects(mailbox, address):
    return [str(m["Subject"]).split("] ", 1)[1] for m in mailbox.to(address)]


def _card_line(state, seat):
    from pbem.games import rules_for

    rules = rules_for("kardinal-koenig")
    return f"Your hand ({state.players[seat]}): {rules.card_words(state.hands[seat])}"


def test_every_seat_is_invited_with_its_own_hand_the_rules_and_its_link(app, client, mailbox):
    """The invitation names the players, the seat's hand, the rules summary and its link."""
    created, _ = new_game(app, 4, "invite")
    _, state = game_state(app, created.game_id)
    for seat in range(4):
        (mail,) = mailbox.to(f"p{seat}@example.org")
        text = text_of(mail)
        assert str(mail["Subject"]).endswith("You are invited to play")
        assert _card_line(state, seat) in text
        assert "How to play" in text and "joker" in text
        assert all(f"Player {i}" in text for i in range(4))
        assert ("You start" in text) == (seat == state.start)
        page = client.get(f"/seat/{token_in(mail)}").get_data(as_text=True)
        assert f"You are <strong>Player {seat}</strong>" in page
        assert token_in(mail) in html_of(mail)


def test_the_next_player_gets_your_turn_with_the_news_position_deadline_and_link(app, mailbox):
    """'Your turn' has the hand, face-up cards, what happened since, scores and the deadline."""
    _, tokens = new_game(app, 3, "turn-mail")
    _, start = game_state(app)
    play_moves(app, tokens, 10, until=lambda s: s.current != start.current)
    game, state = game_state(app)
    nxt = state.current
    mail = mailbox.to(f"p{nxt}@example.org")[-1]
    text = text_of(mail)
    assert str(mail["Subject"]).endswith("Your turn")
    assert _card_line(state, nxt) in text
    assert "Face-up cards:" in text and "Scores:" in text
    news = text.split("Since your last turn:", 1)[1]
    mover = state.players[start.current]
    assert f"- {mover} played" in news or f"- {mover} exchanged" in news
    assert game.deadline_at.strftime("%d %B %Y, %H:%M UTC") in text
    assert "drew a card from the deck" in text  # the other seat's deck card stays unnamed


def test_other_seats_hear_of_each_turn_unless_they_chose_otherwise(app, client, mailbox):
    """After a turn, the seats not to move get what was played and who is next, by choice."""
    _, tokens = new_game(app, 4, "notify", start=0)
    for seat, choice in ((2, "turn"), (3, "digest")):
        page = client.get(f"/seat/{tokens[seat]}").get_data(as_text=True)
        response = client.post(f"/seat/{tokens[seat]}/settings",
                               data={"csrf_token": field(page, "csrf_token"), "notify": choice})
        assert response.status_code == 303
    play_moves(app, tokens, 10, until=lambda s: s.current != 0)
    assert _subjects(mailbox, "p0@example.org") == ["You are invited to play"]
    assert _subjects(mailbox, "p1@example.org")[-1] == "Your turn"
    assert _subjects(mailbox, "p2@example.org") == ["You are invited to play"]
    assert _subjects(mailbox, "p3@example.org") == ["You are invited to play"]
    # A day later the digest goes out to the seat that asked for one, with the news in it.
    deliver_all_due(app, utcnow() + timedelta(hours=25))
    digest = mailbox.to("p3@example.org")[-1]
    assert str(digest["Subject"]).endswith("What happened today")
    assert "played" in text_of(digest) or "exchanged" in text_of(digest)
    # The every-move seat: after seat 1's turn, seat 0 (the mover before) hears of it.
    play_moves(app, tokens, 10, until=lambda s: s.current != 1)
    moved = mailbox.to("p0@example.org")[-1]
    assert str(moved["Subject"]).endswith("Player 2 is next")
    assert "Next to move: Player 2 (green)" in text_of(moved)


def test_a_digest_waits_for_its_day_and_a_turn_mail_takes_its_place(app, client, mailbox):
    """Digest news older than a day is mailed once; a 'your turn' mail covers what is waiting."""
    _, tokens = new_game(app, 3, "digest", start=0)
    page = client.get(f"/seat/{tokens[2]}").get_data(as_text=True)
    client.post(f"/seat/{tokens[2]}/settings",
                data={"csrf_token": field(page, "csrf_token"), "notify": "digest"})
    play_moves(app, tokens, 10, until=lambda s: s.current != 0)
    deliver_all_due(app, utcnow() + timedelta(hours=1))
    assert _subjects(mailbox, "p2@example.org") == ["You are invited to play"]
    play_moves(app, tokens, 10, until=lambda s: s.current != 1)  # now seat 2's turn
    assert _subjects(mailbox, "p2@example.org")[-1] == "Your turn"
    deliver_all_due(app, utcnow() + timedelta(days=3))
    assert "What happened today" not in _subjects(mailbox, "p2@example.org")


def test_the_end_of_the_game_is_mailed_to_everyone_with_the_breakdown(app, mailbox):
    """The final mail reaches every seat with the scoring breakdown and the winner."""
    _, tokens = new_game(app, 3, "final")
    play_moves(app, tokens, 2000)
    game, state = game_state(app)
    assert state.is_over and game.status == "finished" and game.deadline_at is None
    for seat in range(3):
        final = mailbox.to(f"p{seat}@example.org")[-1]
        text = text_of(final)
        assert str(final["Subject"]).endswith("The game is over")
        assert "Final scoring" in text and "Winner" in text
        assert all(f"Player {i} ({state.players[i]}) {state.scores[i]}" in text
                   for i in range(3))
        assert text.count("Final scoring") == 1


def test_sent_mail_keeps_no_link_in_the_database(app, mailbox):
    """Once delivered, the stored copy of a mail no longer holds the seat's secret."""
    from sqlmodel import select

    from pbem.db import reading
    from pbem.models import OutboxMessage

    _, tokens = new_game(app, 3, "redact")
    mailbox.deliver()
    with app.app_context(), reading() as session:
        rows = session.exec(select(OutboxMessage)).all()
    assert rows and all(r.status == "sent" for r in rows)
    assert not any(t in r.text_body or t in r.html_body for r in rows for t in tokens)


def test_a_title_that_could_break_a_mail_header_is_refused(app):
    """A game title with a line break (header injection) is refused before anything is stored."""
    import pytest

    from pbem.games import SetupProblem

    for title in ("Friday\nBcc: x@evil.example", "", "x" * 101):
        with pytest.raises(SetupProblem, match="title"):
            new_game(app, 3, "title", title=title)
    from sqlmodel import func, select

    from pbem.db import reading
    from pbem.models import Game

    with app.app_context(), reading() as session:
        assert session.exec(select(func.count()).select_from(Game)).one() == 0
