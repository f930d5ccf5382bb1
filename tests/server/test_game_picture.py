"""The whole game as a picture (issue 46, point 4): an animated PNG of a finished game, turn by
turn as a spectator sees it, attached to the final mail (delivered to a real SMTP server,
aiosmtpd) and shown on the spectator page."""

from __future__ import annotations

import dataclasses
import io

import pytest
from PIL import Image
from server import game_state, new_game, play_moves, text_of
from test_mail_delivery import SmtpServer, smtp_app

from pbem.games import picture, rules_for
from pbem.scheduler.outbox import deliver_all_due

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

KK = "kardinal-koenig"
KC = "knights-castles"


@pytest.fixture
def smtp():
    server = SmtpServer()
    server.start()
    yield server
    server.stop()


def _frames(png: bytes) -> list[Image.Image]:
    """Each frame of an APNG as Pillow composes it, in RGB."""
    image = Image.open(io.BytesIO(png))
    out = []
    for n in range(image.n_frames):
        image.seek(n)
        out.append(image.convert("RGB"))
    return out


def _still(kind: str, state) -> Image.Image:
    """The still picture of `state`, on white as the frames are."""
    rules = rules_for(kind)
    image = Image.open(io.BytesIO(picture.still(rules, kind, state, "en"))).convert("RGBA")
    ground = Image.new("RGBA", image.size, "white")
    ground.alpha_composite(image)
    return ground.convert("RGB")


def _difference(frame: Image.Image, still: Image.Image) -> float:
    """How far a frame is from a still picture, scaled as the frames are: the mean difference
    of a colour channel, in levels (the frames' palette and scaling alone make about one)."""
    import numpy as np

    scaled = still.resize((frame.width, round(still.height * frame.width / still.width)),
                          Image.Resampling.LANCZOS)
    part = frame.crop((0, 0, *scaled.size))
    return float(np.abs(np.asarray(part, dtype=int) - np.asarray(scaled, dtype=int)).mean())


def _log(app, game_id: int = 1) -> list[tuple]:
    from sqlmodel import select

    from pbem.ground.db import reading
    from pbem.ground.models import MoveRecord

    with reading(app) as session:
        return [tuple(row) for row in session.exec(
            select(MoveRecord.number, MoveRecord.notation, MoveRecord.lines_json)
            .where(MoveRecord.game_id == game_id).order_by(MoveRecord.number))]


def test_the_final_mail_carries_the_whole_game_and_the_spectator_page_shows_it(tmp_path, smtp):
    """A finished game of Kardinal & König: its final mail, delivered over SMTP, has the whole
    game attached as an APNG of one frame per turn and the set-up (the first frame is the
    empty board), under 1 MB; the spectator page shows the same picture, served with caching
    headers; a running game has none."""
    from pbem.services import game_picture, turns

    app = smtp_app(tmp_path, smtp, MAIL_GAME_PICTURE=True)
    client = app.test_client()
    _, tokens = new_game(app, 3, "whole")
    game, _ = game_state(app)
    assert client.get(f"/watch/{game.watch_id}/game.png").status_code == 404, \
        "no picture before the game is over"
    assert "game.png" not in client.get(f"/watch/{game.watch_id}").get_data(as_text=True)
    play_moves(app, tokens, 2000)
    game, state = game_state(app)
    assert game.status == "finished"
    deliver_all_due(app)

    log = _log(app)
    played_turns = turns.numbered(rules_for(KK), 0, log)[-1]
    finals = [r["message"] for r in smtp.received
              if str(r["message"]["Subject"]).endswith("The game is over")]
    assert len(finals) == 3
    attached = [[part for part in mail.iter_attachments()
                 if part.get_filename() == "whole-game.png"] for mail in finals]
    assert all(len(parts) == 1 for parts in attached), "each final mail carries it once"
    png = attached[0][0].get_content()
    assert all("is attached as a moving picture (whole-game.png)" in text_of(mail)
               for mail in finals)
    assert all(parts[0].get_content() == png for parts in attached)
    assert len(png) < 1_000_000, (len(png), played_turns)
    image = Image.open(io.BytesIO(png))
    assert image.format == "PNG" and image.is_animated and image.get_format_mimetype() == \
        "image/apng"
    assert image.n_frames == played_turns + 1, (image.n_frames, played_turns)

    frames = _frames(png)
    with app.app_context():
        states = game_picture.frames(KK, game.state_json, log)
        assert states[0].ply == 0 and len(states) == played_turns + 1
        empty, final = _still(KK, states[0]), _still(KK, state)
        near, far = _difference(frames[0], empty), _difference(frames[0], final)
        assert near < 1.5 and far > 2 * near + 1, (near, far, "the first frame: the empty board")
        assert _difference(frames[-1], final) < 1.5, "the last frame: the final board"
        # No hidden card: a frame is the same whatever the hands, the deck and the draws are.
        middle = states[len(states) // 2]
        hidden = dataclasses.replace(middle, hands=middle.hands[1:] + middle.hands[:1],
                                     deck=tuple(reversed(middle.deck)),
                                     drawn=middle.drawn[1:] + middle.drawn[:1])
        assert hidden.hands != middle.hands and hidden.deck != middle.deck
        shown = _frames(picture.whole_game(KK, [states[0], middle]))
        assert _frames(picture.whole_game(KK, [states[0], hidden]))[1].tobytes() == \
            shown[1].tobytes() != shown[0].tobytes()

    page = client.get(f"/watch/{game.watch_id}").get_data(as_text=True)
    assert f'src="/watch/{game.watch_id}/game.png"' in page
    served = client.get(f"/watch/{game.watch_id}/game.png")
    assert served.status_code == 200 and served.mimetype == "image/png"
    assert served.data == png, "made once, kept: the mail's picture"
    assert "public" in served.headers["Cache-Control"] and "max-age=" in \
        served.headers["Cache-Control"]
    again = client.get(f"/watch/{game.watch_id}/game.png",
                       headers={"If-None-Match": served.headers["ETag"]})
    assert again.status_code == 304 and not again.data
    kept = list((tmp_path / "instance" / game_picture.FOLDER).glob("*.png"))
    assert len(kept) == 1 and kept[0].read_bytes() == png


def test_a_knights_and_castles_picture_shows_each_tableau_position(app):
    """Knights & Castles: one frame per position given, the first the set-up's tableaus."""
    rules = rules_for(KC)
    with app.app_context():
        state = rules.new_state(list(rules.colours)[:3], "tableaus", 0)
        states = [state]
        while len(states) < 12 and rules.to_move(state) is not None:
            state = rules.apply(state, rules.parse(state, rules.bot_move(
                state, rules.bots[0], f"move {len(states)}")))
            states.append(state)
        png = picture.whole_game(KC, states, "en")
        first = _still(KC, states[0])
    frames = _frames(png)
    assert len(frames) == len(states) and Image.open(io.BytesIO(png)).is_animated
    near, far = _difference(frames[0], first), _difference(frames[-1], first)
    assert near < 4 and far > 2 * near, (near, far, "the first frame: the set-up")
