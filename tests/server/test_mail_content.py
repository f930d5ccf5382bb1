"""What each mail says: invitation, your turn, a turn by someone else, digest, final result."""

from datetime import timedelta

import pytest
from server import field, game_state, html_of, new_game, play_moves, text_of, token_in

from pbem.ground.db import utcnow
from pbem.scheduler.outbox import deliver_all_due

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL


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
        # The starter reads in the subject that it starts (issue 32).
        assert str(mail["Subject"]).endswith(
            "You are invited to play" + (", and you start" if seat == state.current else ""))
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
    assert "Since your last turn" not in text, "this seat has not had a turn yet"
    news = text.split("So far in this game:", 1)[1]
    mover = f"Player {start.current} ({state.players[start.current]})"
    assert f"- {mover} played" in news or f"- {mover} exchanged" in news
    # As players read it: "Saturday 5 December 2026, 02:07 UTC" (the day without a leading
    # zero, which a "%d" would give on days 1-9 of a month).
    deadline = game.deadline_at
    assert f"{deadline:%A} {deadline.day} {deadline:%B %Y, %H:%M} UTC" in text
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
    assert _subjects(mailbox, "p0@example.org") == ["You are invited to play, and you start"]
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


def test_the_end_of_the_game_is_mailed_to_everyone_with_the_breakdown(app, client, mailbox):
    """The final mail (text and HTML) and the seat page show one result table: each seat's
    intermediate points, the final points by part, the total that is their sum, pieces left,
    the rank and the winner; how ranks earn points, and a link to the rules."""
    import re

    _, tokens = new_game(app, 3, "final")
    play_moves(app, tokens, 2000)
    game, state = game_state(app)
    assert state.is_over and game.status == "finished" and game.deadline_at is None
    winner = max(range(3), key=lambda s: (state.scores[s], state.monastery_supply[s]
                                          + state.advisor_supply[s]))
    for seat in range(3):
        final = mailbox.to(f"p{seat}@example.org")[-1]
        text = text_of(final)
        assert str(final["Subject"]).endswith("The game is over")
        # `[mail] game_picture = false` (the tests' default): no whole game attached, and the
        # mail does not say it is (tests/server/test_game_picture.py has it on).
        assert not [part for part in final.walk() if part.get_filename() == "whole-game.png"]
        assert "whole-game.png" not in text and "whole-game.png" not in html_of(final)
        header = next(line for line in text.splitlines() if line.startswith("Points"))
        assert header.split() == ["Points", *state.players], "a header row of the colours"
        rows = {}
        for line in text.splitlines():
            match = re.match(r"^(\S.*?)\s{2,}((?:-?\d+\*?\s*){3})$", line)
            if match:
                rows[match.group(1).strip()] = match.group(2).split()
        parts = [label for label in rows if label.startswith(("Intermediate", "Monasteries in",
                                                              "Alliance ", "Chains"))]
        # Each alliance on a row of its own (issue 43, point 12), named by its two countries.
        alliances = [label for label in parts if label.startswith("Alliance ")]
        assert len(alliances) >= 2 and all(re.fullmatch(r"Alliance \d+: \S+–\S+", label)
                                           for label in alliances), alliances
        assert len(parts) == 1 + 9 + len(alliances) + 1
        assert [int(v) for v in rows["Total"]] == list(state.scores)
        assert [sum(int(rows[label][s]) for label in parts) for s in range(3)] == \
            list(state.scores), "the parts add up to the total, the intermediate scoring too"
        assert rows["Rank"][winner] == "1*"
        assert f"{state.players[winner]} = Player {winner} (winner)" in text
        assert "the second a point for each monastery of the first" in text
        assert "boardgamegeek.com" in text
        assert "Total:" not in text and "pts" not in text
        html = html_of(final)
        assert '<th scope="col"' in html and html.count("★ winner") == 1
        assert f"Player {winner}<br>({state.players[winner]})<br><strong>★ winner" in html
        page = client.get(f"/seat/{tokens[seat]}").get_data(as_text=True)
        assert '<table class="result"' in page and page.count("★ winner") == 1


def test_a_tie_for_the_most_points_says_how_it_was_broken(app):
    """A tie in points goes to more pieces left, and the table says so; a tie in both is
    shared, and the table says that too."""
    from dataclasses import replace

    import engine
    from pbem.games import rules_for

    rules = rules_for("kardinal-koenig")
    state = engine.new_game(3, 5)
    over = replace(state, phase="over", end_reason="no player can place a piece",
                   scores=(40, 40, 30), monastery_supply=(5, 3, 9), advisor_supply=(2, 2, 2))
    with app.app_context():
        table = rules.result_table(over)
        assert table.winners == (0,) and table.ranks == (1, 2, 3)
        assert table.tie_break == (
            "yellow and red tie with 40 points; the rules give the win to whoever has more "
            "pieces (monasteries and advisors) left in their supply (yellow 7, red 5), so "
            "yellow wins.")
        shared = rules.result_table(replace(over, monastery_supply=(3, 3, 9)))
        assert shared.winners == (0, 1) and shared.ranks == (1, 1, 3)
        assert "share the win" in shared.tie_break
        assert rules.result_table(replace(over, scores=(41, 40, 30))).tie_break is None


def test_sent_mail_keeps_no_link_in_the_database(app, mailbox):
    """Once delivered, the stored copy of a mail no longer holds the seat's secret."""
    from sqlmodel import select

    from pbem.ground.db import reading
    from pbem.ground.models import OutboxMessage

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

    from pbem.ground.db import reading
    from pbem.ground.models import Game

    with app.app_context(), reading() as session:
        assert session.exec(select(func.count()).select_from(Game)).one() == 0


# --- wording (issue 11, point 9) ----------------------------------------------------------------

def _list_under(text: str, heading: str) -> list[str]:
    """The '- ' lines of the list under `heading` in a text mail."""
    lines = text.split(heading, 1)[1].splitlines()[1:]
    out = []
    for line in lines:
        if not line.startswith("- "):
            break
        out.append(line[2:])
    return out


def test_a_seats_second_turn_says_since_your_last_turn_and_lists_only_moves(app, mailbox):
    """The first 'your turn' tells what happened so far, later ones since the seat's last
    turn; who is next is never a line in the list of moves."""
    _, tokens = new_game(app, 3, "second-turn", start=0)
    play_moves(app, tokens, 40)
    first, second = [m for m in mailbox.to("p2@example.org")
                     if str(m["Subject"]).endswith("Your turn")][:2]
    assert "So far in this game:" in text_of(first)
    assert "Since your last turn:" in text_of(second) and "So far" not in text_of(second)
    for mail, heading in ((first, "So far in this game:"), (second, "Since your last turn:")):
        moves = _list_under(text_of(mail), heading)
        assert moves and not [line for line in moves if line.endswith(" is next.")]
    moved = [m for m in mailbox.to("p0@example.org") if str(m["Subject"]).endswith(" is next")]
    for mail in moved:
        assert not [line for line in _list_under(text_of(mail), "#1:") if "is next" in line]


def test_counts_read_as_english_plurals_everywhere(app, mailbox):
    """No 'time(s)', '1 pts', '1 cards': counted words follow the plural rules."""
    import re
    from dataclasses import replace

    from pbem.games import rules_for

    _, tokens = new_game(app, 3, "plurals")
    play_moves(app, tokens, 3000)
    rules = rules_for("kardinal-koenig")
    _, state = game_state(app)
    with app.app_context():
        one = rules.position_lines(replace(state, deck=("R",), advisor_supply=(1, 2, 8),
                                           monastery_supply=(1, 0, 2)), 0)
    assert "Deck: 1 card;" in " ".join(one)
    assert "yellow 1 monastery, 1 advisor; red 0 monasteries, 2 advisors" in " ".join(one)
    bad = re.compile(r"\(s\)|\b1 (pts|cards|points|monasteries|advisors|times)\b|\bpts\b")
    for mail in mailbox.messages():
        for body in (text_of(mail), html_of(mail)):
            assert not bad.search(body), (mail["Subject"], bad.search(body).group(0))


def test_the_turn_file_header_and_the_invitations_how_to_play(app, mailbox):
    """The turn file names the seat and game; 'How to play' is paragraphs in HTML, no <pre>."""
    _, _ = new_game(app, 3, "header", start=0, title="Demo game")
    invitation = mailbox.to("p0@example.org")[0]
    html = html_of(invitation)
    assert "<pre" not in html
    how = html.split("How to play", 1)[1]
    assert how.count("<p>") >= 5 and "any other country" in how
    assert "German rule book" in how and "boardgamegeek.com" in how
    text = text_of(invitation)
    # Up to the turn file the starting seat's invitation carries (issue 29, point 12).
    how_text = text.split("How to play", 1)[1].split("Your turn file", 1)[0]
    assert max(len(line) for line in how_text.splitlines()) <= 80


def test_turn_file_header_names_the_seat_and_the_game(app, mailbox):
    _, tokens = new_game(app, 3, "header2", start=0, title="Demo game")
    play_moves(app, tokens, 10, until=lambda s: s.current != 0)
    turn = [m for m in mailbox.to("p1@example.org") if str(m["Subject"]).endswith("Your turn")]
    text = text_of(turn[0])
    assert "Turn file of Player 1 (red) in Demo game #1" in text
    assert "Demo game by post" not in text


def test_the_html_mail_shows_the_board_once_with_its_picture(app, mailbox):
    """HTML mail: the cards and scores as a list, the board as a picture and one table; the
    picture is a PNG attached inline (multipart/related, cid:), a real board that changes
    after a move."""
    import io
    import re

    from PIL import Image

    _, tokens = new_game(app, 3, "picture", start=0)
    play_moves(app, tokens, 10, until=lambda s: s.current != 0)
    pictures = []
    for mail in (mailbox.to("p0@example.org")[0],
                 next(m for m in mailbox.to("p1@example.org")
                  if str(m["Subject"]).endswith("Your turn"))):
        html = html_of(mail)
        assert html.count("<h3>The board</h3>") == 1
        assert not re.search(r"\w: monasteries (none|\w+ \()", html) \
            and "No pieces yet in" not in html, \
            "the board is not listed a second time"
        assert "No pieces yet in" in text_of(mail), "the text part keeps it in words"
        related = [p for p in mail.walk() if p.get_content_type() == "multipart/related"]
        assert len(related) == 1
        images = [p for p in mail.walk() if p.get_content_type() == "image/png"]
        assert len(images) == 1
        cid = images[0]["Content-ID"].strip("<>")
        assert f'src="cid:{cid}"' in html
        image = Image.open(io.BytesIO(images[0].get_content()))
        assert image.format == "PNG" and image.size[0] == 800 and 900 < image.size[1] < 1100
        colours = image.convert("RGB").getcolors(maxcolors=1 << 20)
        assert len(colours) > 50, "a real picture, not a blank"
        pictures.append(images[0].get_content())
    assert pictures[0] != pictures[1], "the picture after the first turn shows its pieces"
    from sqlmodel import select

    from pbem.ground.db import reading
    from pbem.ground.models import OutboxMessage

    with app.app_context(), reading() as session:
        assert all(r.picture_json is None for r in session.exec(select(OutboxMessage))
                   if r.status == "sent"), "the copy of the game's state goes once sent"


def test_without_the_picture_setting_the_mail_shows_the_board_as_a_table(app, mailbox):
    """[mail] board_picture = false: no image part, the board heading and table still once."""
    app.config["MAIL_BOARD_PICTURE"] = False
    new_game(app, 3, "no-picture", start=0)
    mail = mailbox.to("p0@example.org")[0]
    assert mail.get_content_type() == "multipart/alternative"
    assert not [p for p in mail.walk() if p.get_content_type().startswith("image/")]
    html = html_of(mail)
    assert "cid:" not in html and html.count("<h3>The board</h3>") == 1 and "<table" in html


def test_players_are_named_by_name_and_colour_and_the_reader_as_you(app, client, mailbox):
    """Issue 43, point 11: the log and the mails name a player "Player 1 (red)", not "red";
    on a player's own page they are "you", in German and Spanish too."""
    import json

    from sqlmodel import select

    from pbem.ground import i18n
    from pbem.ground.db import reading
    from pbem.ground.models import MoveRecord

    _, tokens = new_game(app, 3, "names")
    _, start = game_state(app)
    mover, colour = start.current, start.players[start.current]
    play_moves(app, tokens, 10, until=lambda s: s.current != start.current)
    _, state = game_state(app)
    named = f"Player {mover} ({colour}) played"
    other = state.current
    text = text_of(mailbox.to(f"p{other}@example.org")[-1])
    assert f"- {named}" in text, text
    assert f"- {colour} played" not in text
    others_page = client.get(f"/seat/{tokens[other]}").get_data(as_text=True)
    assert named in others_page
    own_page = client.get(f"/seat/{tokens[mover]}").get_data(as_text=True)
    assert f"Player {mover} (you, {colour}) played" in own_page
    assert named not in own_page
    with app.app_context(), reading() as session:
        first = session.exec(select(MoveRecord).order_by(MoveRecord.number)).first()
        lines = json.loads(first.lines_json)
        with i18n.in_language("de"):
            german = i18n.render(lines[str(mover)][0]), i18n.render(lines[str(other)][0])
        with i18n.in_language("es"):
            spanish = i18n.render(lines[str(mover)][0]), i18n.render(lines[str(other)][0])
    words = {"red": ("rot", "rojo"), "yellow": ("gelb", "amarillo"), "green": ("grün", "verde"),
             "purple": ("lila", "morado"), "blue": ("blau", "azul")}[colour]
    assert german[0].lower().startswith(f"player {mover} (du, {words[0]})"), german
    assert german[1].lower().startswith(f"player {mover} ({words[0]})"), german
    assert spanish[0].startswith(f"Player {mover} (tú, {words[1]})"), spanish
