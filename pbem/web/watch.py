"""The public spectator page of a game, its board picture, and the history of its moves.

`/watch/<watch_id>` is a game's address for anyone, not a seat link: the board from a
spectator's view (no hand, no card of the deck), the scores, whose turn it is, what is on the
table and the log in a spectator's words. With `?at=N` it shows the board as it was after the
first N moves, replayed from the game's set-up through the game interface, with every move
linked and previous/next links. `/watch/<watch_id>/board.svg` is the picture alone.

`/seat/<token>/history?at=N` is the same history in one seat's view: its own hand as it was
then, never another seat's. Every route here is a GET and changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from flask import Blueprint, Response, render_template, request

from ..games import GameRules
from ..ground import i18n
from ..services import game_picture
from ..services.errors import Malformed, NotFound
from ..services.log import LogEntry
from ..services.reviews import review_of
from ..services.seats import load_seat
from ..services.watching import UNKNOWN_GAME, WATCH_ID, load_watched
from .site import answer_refusals

bp = Blueprint("watch", __name__)

PICTURE_SECONDS = 7 * 24 * 3600  # a finished game's picture changes no more


@dataclass(frozen=True)
class Moment:
    """Which position a history page shows: after `at` of the game's `moves` moves."""

    at: int | None  # None: the position as it is now
    moves: int
    turns: tuple[int, ...] = ()  # the players' turn of each logged move, oldest first
    rules: GameRules | None = None  # with `state`, how the players name a turn
    state: object = None

    def turn_of(self, n: int) -> int:
        """The turn (as players count them) of move `n` (1 to `moves`); 0 for the set-up."""
        return self.turns[n - 1] if 0 < n <= len(self.turns) else 0

    def label_of(self, n: int) -> str:
        """The turn of move `n` as its players name it: "Turn 7", "Round 2, red's turn"."""
        return cast(GameRules, self.rules).turn_label(self.state, self.turn_of(n))

    def short_of(self, n: int) -> str:
        """The same inside a sentence: "turn 7", "round 2"."""
        return cast(GameRules, self.rules).turn_short(self.state, self.turn_of(n))

    @property
    def last_turn(self) -> int:
        """The turn of the latest move (0 before any)."""
        return self.turn_of(self.moves)

    @property
    def shown(self) -> int:
        return self.moves if self.at is None else self.at

    @property
    def previous(self) -> int | None:
        return self.shown - 1 if self.shown > 0 else None

    @property
    def next(self) -> int | None:
        return self.shown + 1 if self.shown < self.moves else None


def moment(raw: str | None, log: list[LogEntry], rules: GameRules, state) -> Moment:
    """The `at` of a history address, checked against the moves of `log` (oldest first) of
    the game of `rules` now in `state`."""
    moves, turns = len(log), tuple(entry.turn_number for entry in log)
    if raw is None:
        return Moment(None, moves, turns, rules, state)
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 9:
        raise Malformed(f"“at={raw[:20]}” is not a move number: use a whole number from 0 to "
                        f"{moves} (0 is the set-up, {moves} the position now).")
    at = int(raw)
    if at > moves:
        raise NotFound(f"This game has {moves} move{'' if moves == 1 else 's'} so far, so there "
                       f"is no position after move {at}. Use a number from 0 to {moves}.")
    return Moment(at, moves, turns, rules, state)


def _history(rules: GameRules, state, log: list[LogEntry], when: Moment):
    """The state at `when`: the stored one now, else the first moves replayed from the set-up."""
    if when.at is None:
        return state
    notations = [entry.notation for entry in sorted(log, key=lambda e: e.number)]
    return rules.history_state(state, notations[:when.at])


answer_refusals(bp)


# --- the spectator's pages ----------------------------------------------------------------------

def _answer(response: Response) -> Response:
    # Anyone with the address may look, but search engines are asked to leave it out.
    response.headers["X-Robots-Tag"] = "noindex, nofollow"
    return response


@bp.get("/watch/<watch_id>")
def spectate(watch_id: str):
    watched = load_watched(watch_id)
    when = moment(request.args.get("at"), watched.log, watched.rules, watched.state)
    rules = watched.rules
    state = _history(rules, watched.state, watched.log, when)
    to_move = rules.to_move(state)
    page = render_template(
        "watch/game.html", game=watched.game, seats=watched.seats, rules=rules,
        view=rules.view(state, None), picture=rules.board_picture(state, None, False),
        seat=None, log=watched.log, when=when, to_move=to_move,
        outcome=rules.outcome_lines(state), kind_template=f"games/{watched.game.kind}/",
        review=review_of(watched.game))
    return _answer(Response(page))


@bp.get("/watch/<watch_id>/board.svg")
def board_picture(watch_id: str):
    """The board as it is now, from a spectator's view, as an SVG image of its own."""
    watched = load_watched(watch_id, with_log=False)
    picture = watched.rules.board_picture(watched.state, None, False)
    return _answer(Response(picture, mimetype="image/svg+xml"))


@bp.get("/watch/<watch_id>/game.png")
def whole_game_picture(watch_id: str):
    """The finished game turn by turn, as an animated PNG: made once per language and kept
    (pbem.services.game_picture), so a browser and a cache may keep it too."""
    if not WATCH_ID.fullmatch(watch_id):
        raise NotFound(UNKNOWN_GAME)
    made = game_picture.whole_game(watch_id, i18n.language())
    response = Response(made.png, mimetype="image/png")
    response.set_etag(made.tag)
    response.cache_control.public = True
    response.cache_control.max_age = PICTURE_SECONDS
    response.vary.add("Accept-Language")
    return _answer(cast(Response, response.make_conditional(request)))  # it answers itself


# --- a seat's own history -----------------------------------------------------------------------

@bp.get("/seat/<token>/history")
def seat_history(token: str):
    """The board and the seat's own hand as they were after move N (?at=N; default: now)."""
    ctx = load_seat(token, log_limit=None)
    log = ctx.log[::-1]  # oldest first, in this seat's words
    when = moment(request.args.get("at"), log, ctx.rules, ctx.state)
    rules, seat = ctx.rules, ctx.seat
    state = _history(rules, ctx.state, log, when)
    to_move = rules.to_move(state)
    return render_template(
        "watch/seat_history.html", ctx=ctx, game=ctx.game, seat=seat, seats=ctx.seats,
        rules=rules, view=rules.view(state, seat.number),
        picture=rules.board_picture(state, seat.number, False), token=token, log=log,
        when=when, to_move=to_move, outcome=rules.outcome_lines(state),
        kind_template=f"games/{ctx.game.kind}/", review=review_of(ctx.game))
