"""Knights & Castles behind the server's game interface: a thin layer over
`engine.knights_castles`.

The game differs from Kardinal & König in ways the interface already allows: a turn is many
moves in phases, and a decision may belong to a seat that is not the turn's player (the target
of a disaster chooses its losses, the target of an offer answers it), so `to_move` changes hands
within a turn and each such seat gets its own mail, deadline and default move.
"""

from __future__ import annotations

import functools
import itertools
import random
from collections.abc import Mapping
from typing import Any

import engine.knights_castles as kc
from engine.errors import IllegalMoveError, NotationError, SetupError
from engine.knights_castles.bots import BOT_NAMES, choose_move
from engine.knights_castles.cards import INDEX, KINDS
from engine.knights_castles.moves import MAX_NOTATION_LENGTH
from engine.knights_castles.narrate import describe, hand_words, name
from engine.knights_castles.svg import tableau_svg

from ..i18n import gettext
from . import MoveError, SetupProblem

MOVE_LOG_LENGTH = 200  # the move log's notation column (pbem.models.MoveRecord.notation)

# The rule page has no home of its own that we know of; the search finds the game's entries.
RULES_URL = ("https://boardgamegeek.com/geeksearch.php?action=search&objecttype=boardgame"
             "&q=Knights+%26+Castles")
SWITCHES = {
    "catch-up": "a player who collected less revenue than an opponent in the last tax phase "
                "draws one more card",
    "no-buying": "extra cards cannot be bought",
    "knights-from-hand": "a Knights card in the hand may be discarded as an act of war",
}
# A game is created with any set of the variant switches, named by joining them with '+'.
VARIANTS = {"standard": "the rule page as our readings referee it, no variant"}
for _n in range(1, len(SWITCHES) + 1):
    for _combo in itertools.combinations(SWITCHES, _n):
        VARIANTS["+".join(_combo)] = "; ".join(SWITCHES[s] for s in _combo)

HOW_TO_PLAY = (
    "Knights & Castles is a card game of villages, towns, castles, gold, dice, disasters and "
    "trades. The player with the most gold when the last card is drawn from the deck wins.",
    "A turn has seven phases. Draw: one card (buy more for 5 gold each). Tax: your cards in "
    "play pay their revenue. Build: put resources and leaders into play, each supported "
    "(a village supports a town, mine or castle; a town a city; a castle two knights; a city "
    "two ships and a leader; a ship a trade route). Research: advances for 5 gold. Event: play "
    "one event, disaster or invasion card. Trade: offer other players gold and cards. End: "
    "keep at most 7 cards.",
    "When a disaster or invasion hits you, you choose which cards in play to lose; when a "
    "player offers you a trade, you accept or decline: these decisions are yours, and the "
    "server asks you for them like a turn.",
)


class KnightsCastles:
    kind = "knights-castles"
    title = "Knights & Castles"
    min_players = kc.MIN_PLAYERS
    max_players = kc.MAX_PLAYERS
    colours = kc.COLOURS
    variants = VARIANTS
    rules_url = RULES_URL
    order_examples = ("buy", "build village", "done", "play plague at red")
    variant_question = ("The rule page's notes offer three variants, each a switch; choose the "
                        "ones this game plays with (shown on every page of the game).")
    variant_help = ("the variant switches joined by '+', like catch-up+no-buying (also "
                    "knights-from-hand; default: standard)")

    def summary(self) -> str:
        return gettext("A card game of villages, towns, castles, gold, dice, disasters and "
                       "trades: the most gold when the deck runs out wins.")

    def __init__(self):
        self._loads = functools.lru_cache(maxsize=256)(kc.from_json)

    # --- set-up and storage ---------------------------------------------------------------

    def new_state(self, colours: list[str], seed: str, start: int | None,
                  variant: str | None = None) -> kc.GameState:
        variant = variant or "standard"
        if variant not in VARIANTS:
            raise SetupProblem(f"the variant must be one of {', '.join(VARIANTS)}, "
                               f"not {variant!r}")
        switches = () if variant == "standard" else tuple(variant.split("+"))
        try:
            return kc.new_game(tuple(colours), seed, switches, start)
        except SetupError as exc:
            raise SetupProblem(str(exc)) from None

    def dumps(self, state: kc.GameState) -> str:
        return kc.to_json(state)

    def loads(self, text: str) -> kc.GameState:
        return self._loads(text)

    def variant_of(self, state: kc.GameState) -> str:
        return "+".join(state.variants) or "standard"

    def how_to_play(self, state: kc.GameState) -> list[str]:
        return list(HOW_TO_PLAY)

    def variant_note(self, state: kc.GameState) -> str:
        return f"Rules: {VARIANTS[self.variant_of(state)]}."

    # --- turns ----------------------------------------------------------------------------

    def ply(self, state: kc.GameState) -> int:
        return state.ply

    def to_move(self, state: kc.GameState) -> int | None:
        return state.to_move

    def start_seat(self, state: kc.GameState) -> int:
        return state.start

    def legal(self, state: kc.GameState) -> list[str]:
        """The legal moves in the notation but the offers, which are too many to list."""
        if state.is_over:
            return []
        return [str(m) for m in kc.legal_moves(state).moves]

    def move_patterns(self, state: kc.GameState) -> list[str]:
        """One pattern an opponent the seat may make an offer to now."""
        if state.is_over:
            return []
        return [f"offer {colour}: <gold and/or cards> for <gold and/or cards>"
                for colour in kc.legal_moves(state).offers_to()]

    def parse(self, state: kc.GameState, text: str) -> kc.Move:
        try:
            return kc.parse_move(text)
        except NotationError as exc:
            raise MoveError(str(exc)) from None

    def apply(self, state: kc.GameState, move: kc.Move) -> kc.GameState:
        self.apply_limit(move)
        try:
            return kc.apply_move(state, move)
        except (IllegalMoveError, NotationError) as exc:
            raise MoveError(str(exc)) from None

    def replay(self, state: kc.GameState, notations: list[str]) -> kc.GameState:
        """The game `state` belongs to (same seats, seed, variants) after `notations`."""
        return kc.replay(state.players, state.seed, state.variants, notations,
                         state.start if state.start_chosen else None)

    def history_state(self, state: kc.GameState, notations: list[str]) -> kc.GameState:
        return self.replay(state, notations)

    def notation(self, move: kc.Move) -> str:
        return str(move)

    def notation_for(self, state: kc.GameState, notation: str, mover: int,
                     reader: int | None) -> str:
        """The kept card of a Scholastics pair is its keeper's secret, and an offer's cards are
        seen by its two seats only; the others read 'keep' and 'offer <target>'."""
        if reader == mover:
            return notation
        if notation.startswith("keep "):
            return "keep"
        if notation.startswith("offer "):
            target = notation.split(":")[0].split()[-1]
            if reader is None or state.players[reader] != target:
                return f"offer {target}"
        return notation

    def apply_limit(self, move: kc.Move) -> None:
        """The move log stores at most MOVE_LOG_LENGTH characters of notation."""
        if len(str(move)) > MOVE_LOG_LENGTH:
            raise MoveError(f"this offer is {len(str(move))} characters long in the notation; "
                            f"the log keeps at most {MOVE_LOG_LENGTH}: offer fewer kinds of card")

    def describe(self, before, move, after, reader: int | None) -> list[str]:
        return describe(before, move, after, reader)

    def default_move(self, state: kc.GameState) -> str:
        """The readings' move for a seat that missed its deadline (docs/rules-notes.md, K15)."""
        return str(kc.default_move(state))

    bots = BOT_NAMES

    def bot_move(self, state: kc.GameState, bot: str, seed: str) -> str:
        """The move computer player `bot` makes for the seat to move (the turn's player, or the
        seat a loss or an offer asks): it is handed that seat's view only, never the state."""
        if state.is_over:
            raise MoveError("the game is over; no more moves can be made")
        return str(choose_move(bot, kc.view_for(state, state.to_move), random.Random(seed)))

    # --- what a seat sees -----------------------------------------------------------------

    def view(self, state: kc.GameState, seat: int | None) -> kc.SeatView:
        return kc.view_for(state, seat)

    def view_dict(self, state: kc.GameState, seat: int | None) -> dict:
        return kc.view_for(state, seat).to_dict()

    def board_picture(self, state: kc.GameState, seat: int | None,
                      interactive: bool = False, move: kc.Move | None = None) -> str:
        """Every tableau as one <svg>, from `seat`'s view (None: a spectator's)."""
        view = kc.view_for(state, seat)
        who = "a spectator" if seat is None else state.players[seat]
        title = (f"The tableaus as they will be after your move {move}" if move is not None
                 else f"Every player's cards in play after {state.ply} moves, as {who} sees them")
        return tableau_svg(view, title)

    def scores(self, state: kc.GameState) -> dict[str, int]:
        return kc.score(state)

    def outcome(self, state: kc.GameState) -> dict | None:
        result = kc.outcome(state)
        if result is None:
            return None
        # Gold is the game's only score; pages and mails read "scores" for every game.
        return {**result.to_dict(state.players), "scores": kc.score(state)}

    def outcome_lines(self, state: kc.GameState) -> list[str]:
        result = kc.outcome(state)
        if result is None:
            return []
        names = " and ".join(state.players[s] for s in result.winners)
        return [f"The game is over: {result.reason}.",
                "Gold: " + ", ".join(f"{p} {g}" for p, g in zip(state.players, state.gold)),
                f"Winner{'s' if len(result.winners) > 1 else ''}: {names}."]

    def position_lines(self, state: kc.GameState, seat: int | None) -> list[str]:
        """The position as plain text for `seat`: what a mail or a turn file shows."""
        view = kc.view_for(state, seat)
        lines = []
        if view.hand is not None:
            lines.append(f"Your hand ({state.players[seat]}): "
                         f"{hand_words(state.hands[seat])}")
        if view.choice:
            lines.append(f"Scholastics drew {', '.join(map(name, view.choice))}: keep one.")
        if not state.is_over:
            lines.append(f"Turn {view.turn} of {state.players[view.current]}, {view.phase} "
                         f"phase; to move: {state.players[view.to_move]}.")
        lines.append(f"Deck: {view.deck_size} cards. Discard pile: {len(view.discard)} cards"
                     + (f", the latest {', '.join(map(name, view.discard[-5:]))}"
                        if view.discard else "") + ".")
        if view.dice:
            lines.append(f"Dice so far: {' '.join(map(str, view.dice[-10:]))}"
                         f"{' (latest last)' if len(view.dice) > 1 else ''}.")
        if view.loss:
            loss = view.loss
            what = (f"{loss['roll']} DP of cards in play" if not loss["kinds"]
                    else "one " + " or ".join(map(name, loss["kinds"])))
            lines.append(f"{loss['target']} must lose {what} ({name(loss['card'])} by "
                         f"{loss['by']}).")
        if view.offer:
            offer = view.offer
            shown = offer.get("notation") or f"{offer['from']} to {offer['to']}"
            lines.append(f"Open offer: {shown}.")
        for s, colour in enumerate(state.players):
            in_play = ", ".join(f"{name(c)} x{view.tableau[s].count(c)}"
                                for c in sorted(set(view.tableau[s]), key=INDEX.__getitem__))
            shared = f"; shared {', '.join(map(name, view.shared[s]))}" if view.shared[s] else ""
            lines.append(f"{colour}: gold {view.gold[s]}, DP {view.dp[s]}, revenue "
                         f"{view.revenue[s]}, {view.hand_sizes[s]} cards in hand; in play: "
                         f"{in_play or 'nothing'}{shared}")
        return lines

    # --- the seat page's move form ----------------------------------------------------------

    def move_from_form(self, state: kc.GameState, form: Mapping[str, Any]) -> str:
        """The notation of the move a seat chose on its page; MoveError says what is missing."""
        action = str(form.get("action", ""))
        if action in ("text", "move"):
            text = str(form.get("notation" if action == "text" else "move", "")).strip()
            if not text:
                raise MoveError("type a move in the box, for example 'done'")
            return text[:MAX_NOTATION_LENGTH + 1]
        if action != "offer":
            raise MoveError("choose a move from the list, make an offer, or type a move")
        target = str(form.get("target", ""))
        if target not in state.players:
            raise MoveError("choose the player to make the offer to")
        sides = []
        for side in ("give", "ask"):
            raw = str(form.get(f"{side}_gold", "0") or "0").strip()
            if not (raw.isascii() and raw.isdigit()) or len(raw) > 6:
                raise MoveError(f"the gold you {side} must be a whole number")
            cards = str(form.get(f"{side}_cards", "")).strip()[:MAX_NOTATION_LENGTH]
            parts = ([f"{int(raw)} gold"] if int(raw) else []) + ([cards] if cards else [])
            sides.append(", ".join(parts) or "nothing")
        return f"offer {target}: {sides[0]} for {sides[1]}"

    # --- for the templates -------------------------------------------------------------------

    @staticmethod
    def card_name(card: str) -> str:
        return name(card)

    @staticmethod
    def card_names(cards) -> list[str]:
        return [name(c) for c in cards]

    @staticmethod
    def hand_words(state: kc.GameState, seat: int) -> str:
        """A seat's hand in words: for the admin's page only (it shows every secret)."""
        return hand_words(state.hands[seat])

    @staticmethod
    def tableau_words(state: kc.GameState, seat: int) -> str:
        return hand_words(state.tableau[seat])

    @staticmethod
    def deck_words(state: kc.GameState) -> str:
        return ", ".join(KINDS[k].name for k in reversed(state.deck)) or "empty"
