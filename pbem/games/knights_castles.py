"""Knights & Castles behind the server's game interface: a thin layer over
`engine.knights_castles`.

The game differs from Kardinal & König in ways the interface already allows: a turn is many
moves in phases, and a decision may belong to a seat that is not the turn's player (the target
of a disaster chooses its losses, the target of an offer answers it), so `to_move` changes hands
within a turn and each such seat gets its own mail, deadline and default move.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Mapping
from typing import Any, cast

import engine.knights_castles as kc
from engine.errors import IllegalMoveError, NotationError, SetupError
from engine.knights_castles.bots import BOT_NAMES, choose_move
from engine.knights_castles.cards import INDEX, KINDS
from engine.knights_castles.moves import MAX_NOTATION_LENGTH, written
from engine.knights_castles.narrate import describe, hand_words, name, phase
from engine.knights_castles.svg import tableau_svg

from ..ground import i18n
from ..ground.i18n import N_, gettext, ngettext
from ..ground.kept import Kept
from .interface import (
    ByState,
    MoveError,
    ResultTable,
    RulesBase,
    SetupProblem,
    ShownBase,
    StateCache,
)

MOVE_LOG_LENGTH = 200  # the move log's notation column (pbem.ground.models.MoveRecord.notation)

# The rule page has no home of its own that we know of: this server's own page of the rules
# (pbem.web.pages.rules) is where the whole rules are read, in the reader's language.
RULES_URL = "/rules/knights-castles"
SWITCHES = {
    "catch-up": N_("a player who collected less revenue than an opponent in the last tax phase "
                   "draws one more card"),
    "no-buying": N_("extra cards cannot be bought"),
    "knights-from-hand": N_("a Knights card in the hand may be discarded as an act of war"),
}
STANDARD = N_("the standard rules, no variant")
VARIANT_PLAYERS = 2  # the rule page's variants are "for a two-player game only"
# A game is created with any set of the variant switches, named by joining them with '+'.
VARIANTS = {"standard": STANDARD}
for _n in range(1, len(SWITCHES) + 1):
    for _combo in itertools.combinations(SWITCHES, _n):
        VARIANTS["+".join(_combo)] = "; ".join(SWITCHES[s] for s in _combo)

# The invitation's and the seat page's summary of the rules, in English, written from the rule
# page (../shared/rules/knights-and-castles.en.md) and its readings; there is no German or
# Spanish rule book, so the catalogs hold faithful translations of it, in the card names the
# catalogs and docs/notation.md use.
HOW_TO_PLAY = (
    N_("Knights & Castles is a card game of villages, towns, castles, gold, dice, disasters "
       "and trades. The player with the most gold when the last card is drawn from the deck "
       "wins."),
    N_("A turn has seven phases. Draw: one card (buy more for 5 gold each). Tax: your cards in "
       "play pay their revenue. Build: put resources and leaders into play, each supported "
       "(a village supports a town, mine or castle; a town a city; a castle two knights; a "
       "city two ships and a leader; a ship a trade route). Research: advances for 5 gold. "
       "Event: play one event, disaster or invasion card. Trade: offer other players gold and "
       "cards. End: keep at most 7 cards."),
    N_("When a disaster or invasion hits you, you choose which cards in play to lose; when a "
       "player offers you a trade, you accept or decline: these decisions are yours, and the "
       "server asks you for them like a turn."),
)


def _said(exc: Exception) -> str:
    """An engine error's reason in the reader's language (a Phrase; plain English otherwise)."""
    return i18n.render(exc.args[0]) if exc.args else str(exc)


def start_rolls(state) -> list[list[tuple[int, int]]]:
    """The roll for the start seat as the deal made it (engine.knights_castles.state.deal), from
    a position or a seat's view: each round's (seat, die), the tied seats of one rolling again
    in the next; none when the organiser chose the start seat."""
    if state.start_chosen:
        return []
    rounds, rolling, used = [], list(range(len(state.players))), 0
    while len(rolling) > 1 and used + len(rolling) <= len(state.dice):
        one = list(zip(rolling, state.dice[used:used + len(rolling)]))
        used += len(rolling)
        rounds.append(one)
        best = max(r for _, r in one)
        rolling = [s for s, r in one if r == best]
    return rounds


def _names(cards) -> str:
    return ", ".join(i18n.render(name(c)) for c in cards)


class KnightsCastles(RulesBase, ShownBase):
    kind = "knights-castles"
    title = "Knights & Castles"
    min_players = kc.MIN_PLAYERS
    max_players = kc.MAX_PLAYERS
    colours = kc.COLOURS
    variants = VARIANTS
    rules_url = RULES_URL
    # A whole turn for the turn file, in the notation: shown in the reader's words (in_words).
    order_notation = ("buy", "build village", "done", "play plague at red")

    @property
    def order_examples(self) -> tuple[str, ...]:
        return tuple(self.in_words(n) for n in self.order_notation)

    variant_question = N_("The rule page's notes offer three variants for a two-player game "
                          "only, each a switch; choose the ones this game plays with (shown on "
                          "every page of the game).")
    variant_help = ("the variant switches joined by '+', like catch-up+no-buying (also "
                    "knights-from-hand; default: standard)")

    def summary(self) -> str:
        return gettext("A card game of villages, towns, castles, gold, dice, disasters and "
                       "trades: the most gold when the deck runs out wins.")

    def __init__(self):
        # States are immutable, so a stored text read once can be shared by later requests.
        self._states = StateCache(kc.from_json)
        self._views = ByState(self._view_dict)
        self._moves = Kept(4096)

    # --- set-up and storage ---------------------------------------------------------------

    def new_state(self, colours: list[str], seed: str, start: int | None,
                  variant: str | None = None) -> kc.GameState:
        variant = variant or "standard"
        if variant not in VARIANTS:
            raise SetupProblem(gettext("the variant must be one of %(variants)s, not "
                                       "%(variant)s", variants=", ".join(VARIANTS),
                                       variant=repr(variant)))
        switches = () if variant == "standard" else tuple(variant.split("+"))
        if switches and len(colours) > VARIANT_PLAYERS:
            # The rule page: "The above variations are for a two-player game only."
            raise SetupProblem(gettext(
                "the rule page offers its variants (%(variant)s) for a two-player game only; "
                "play this game of %(count)d with the standard rules, or with two players",
                variant=variant, count=len(colours)))
        try:
            return kc.new_game(tuple(colours), seed, switches, start)
        except SetupError as exc:
            raise SetupProblem(_said(exc)) from None

    def dumps(self, state: kc.GameState) -> str:
        text = kc.to_json(state)
        self._states.remember(text, state)  # what the next request reads back
        return text

    def loads(self, text: str) -> kc.GameState:
        return self._states.get(text)

    def variant_of(self, state: kc.GameState) -> str:
        return "+".join(state.variants) or "standard"

    def how_to_play(self, state: kc.GameState) -> list[str]:
        """A few paragraphs for the invitation mail and the seat page, in the reader's
        language."""
        return [gettext(paragraph) for paragraph in HOW_TO_PLAY]

    def card_table(self) -> list[dict]:
        """The deck for the rules page: each kind of card with its count, revenue, defence
        points and what must be in play to support it, in the reader's words."""
        return [{"name": i18n.render(k.name), "count": k.count, "type": k.type,
                 "revenue": k.revenue, "dp": k.dp,
                 "needs": i18n.render(KINDS[INDEX[k.needs]].name) if k.needs else ""}
                for k in KINDS]

    def variant_label(self, variant: str) -> str:
        """A variant (a set of switches) in the reader's words."""
        if variant == "standard" or variant not in VARIANTS:
            return gettext(STANDARD)
        return "; ".join(gettext(SWITCHES[s]) for s in variant.split("+"))

    def variant_note(self, state: kc.GameState) -> str:
        return gettext("Rules: %(variant)s.", variant=self.variant_label(self.variant_of(state)))

    # --- turns ----------------------------------------------------------------------------

    # A turn is a dozen moves, and the notation does not say which one ends it: the move that
    # does tells that the next player's turn begins (pbem.services.turns).
    # (The older sentence is still in the logs of games begun before players counted rounds.)
    turn_begins = ("Round %(round)d: %(who)s draws and collects tax.",
                   N_("Turn %(turn)d: %(who)s draws and collects tax."))
    # A round is some forty phase changes: a mail tells what was done and whose move it is.
    quiet_in_news = frozenset({"You ended the %(phase)s.", "%(who)s ended the %(phase)s."})
    latest_only_in_news = frozenset({"Now you: %(asks)s (%(phase)s).",
                                     "Now %(who)s: %(asks)s (%(phase)s)."})

    def mid_turn(self, state: kc.GameState) -> bool:
        """Always: the move that ends a turn begins the next one (its draw and tax)."""
        return True

    def turn_label(self, state: kc.GameState, turn: int) -> str:
        """Players count rounds of the table: "Round 12, red's turn" (turn 45 of four)."""
        players = len(state.players)
        return gettext("Round %(round)d, %(colour)s's turn", round=kc.round_of(turn, players),
                       colour=i18n.colour(state.players[kc.turn_player(state.start, turn,
                                                                       players)]))

    def turn_short(self, state: kc.GameState, turn: int) -> str:
        return gettext("round %(round)d", round=kc.round_of(turn, len(state.players)))

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

    def in_words(self, notation: str) -> str:
        """A move of the notation in the reader's words and card names ('baue Dorf'), which
        the notation reads as the same move: what the seat page's buttons and lists and the
        turn file show."""
        return written(notation, i18n.language())

    def move_patterns(self, state: kc.GameState) -> list[str]:
        """One pattern an opponent the seat may make an offer to now."""
        if state.is_over:
            return []
        return [gettext("offer %(colour)s: <gold and/or cards> for <gold and/or cards>",
                        colour=self.in_words(colour)) for colour in self.offer_targets(state)]

    def offer_targets(self, state: kc.GameState) -> list[str]:
        """The colours the seat to move may make an offer to now."""
        return [] if state.is_over else list(kc.legal_moves(state).offers_to())

    def parse(self, state: kc.GameState, text: str) -> kc.Move:
        # A move's text reads the same in every position (moves are values): read once.
        move = self._moves.get(text)
        if move is not None:
            return move
        try:
            return self._moves.put(text, kc.parse_move(text))
        except NotationError as exc:
            raise MoveError(_said(exc)) from None  # said in the reader's language: not kept

    def apply(self, state: kc.GameState, move: kc.Move) -> kc.GameState:
        self.apply_limit(move)
        try:
            return kc.apply_move(state, move)
        except (IllegalMoveError, NotationError) as exc:
            raise MoveError(_said(exc)) from None

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
            raise MoveError(gettext("this offer is %(length)d characters long in the notation; "
                                    "the log keeps at most %(most)d: offer fewer kinds of card",
                                    length=len(str(move)), most=MOVE_LOG_LENGTH))

    def describe(self, before, move, after, reader: int | None) -> list:
        """The engine's sentences (Phrases: English, with their message ids for the log)."""
        return describe(before, move, after, reader)

    # --- the preview -------------------------------------------------------------------------

    def foretell(self, before: kc.GameState, move: kc.Move, after: kc.GameState) -> list[str]:
        """What `move` will do, in the future tense and the mover's words, naming no card the
        move will draw and no roll of the die (those are told once it is made)."""
        lines = [self._foretold(before, move)]
        effect = kc.effect_on_target(before, move)
        if effect is not None:  # what the card does to its target, by the rules
            lines.append(i18n.render(effect))
        if self._reveals(before, after):
            lines.append(gettext("What you draw or roll is shown once you confirm; the tableaus "
                                 "below are as they are now."))
        if after.is_over:
            lines.append(gettext("This ends the game."))
        elif after.to_move != before.to_move and not self._reveals(before, after):
            # (not over: someone is to move)
            lines.append(gettext("Then %(colour)s is to move.",
                                 colour=i18n.colour(after.players[cast(int, after.to_move)])))
        return lines

    def foretold_state(self, before: kc.GameState, move: kc.Move,
                       after: kc.GameState) -> kc.GameState:
        """The position after the move, unless it draws a card or rolls the die: then the one
        before (a preview never shows what the move has not revealed yet)."""
        return before if self._reveals(before, after) else after

    @staticmethod
    def _reveals(before: kc.GameState, after: kc.GameState) -> bool:
        return len(after.deck) != len(before.deck) or len(after.dice) != len(before.dice)

    def _foretold(self, before: kc.GameState, move: kc.Move) -> str:
        card = self.card_name(move.card) if hasattr(move, "card") else ""
        if isinstance(move, kc.Done):
            return gettext("You will end the %(phase)s.",
                           phase=self.phase_name(before.phase))
        if isinstance(move, kc.Buy):
            return gettext("You will buy one more card for 5 gold.")
        if isinstance(move, kc.Keep):
            return gettext("You will keep %(card)s; the other card goes to the discard pile.",
                           card=card)
        if isinstance(move, kc.Build):
            return gettext("You will build %(card)s.", card=card)
        if isinstance(move, kc.Pay):
            return gettext("You will pay 1 gold to keep %(card)s in play.", card=card)
        if isinstance(move, kc.Abandon):
            return gettext("You will give up %(card)s: it goes to the discard pile.", card=card)
        if isinstance(move, kc.Research):
            return gettext("You will research %(card)s for 5 gold.", card=card)
        if isinstance(move, kc.Share):
            return gettext("You will share %(card)s for 10 gold.", card=card)
        if isinstance(move, kc.Play):
            if move.target is None:
                return gettext("You will play %(card)s.", card=card)
            return gettext("You will play %(card)s against %(colour)s.", card=card,
                           colour=i18n.colour(move.target))
        if isinstance(move, kc.War):
            return gettext("You will discard a Knights card as an act of war against "
                           "%(colour)s.", colour=i18n.colour(move.target))
        if isinstance(move, kc.Lose):
            return gettext("You will lose %(cards)s.", cards=_names(move.cards))
        if isinstance(move, kc.Offer):
            return gettext("You will offer %(colour)s %(give)s for %(ask)s; %(colour)s then "
                           "accepts or declines.", colour=i18n.colour(move.target),
                           give=self.goods(move.give_gold, move.give),
                           ask=self.goods(move.ask_gold, move.ask))
        if isinstance(move, (kc.Accept, kc.Decline)):
            offer, offerer = before.offer, i18n.colour(before.players[before.current])
            if isinstance(move, kc.Decline) or offer is None:
                return gettext("You will decline the offer of %(colour)s.", colour=offerer)
            return gettext("You will accept the offer of %(colour)s: you give %(ask)s and get "
                           "%(give)s.", colour=offerer,
                           give=self.goods(offer.give_gold, offer.give),
                           ask=self.goods(offer.ask_gold, offer.ask))
        if isinstance(move, kc.Discard):
            return gettext("You will discard %(card)s.", card=card)
        return self.in_words(str(move))

    def choice_words(self, state: kc.GameState, notation: str) -> str:
        """A choice as its button says it: the move in the reader's words, and for a loss the
        defence points it gives up ("lose castle (3 DP)"), so the target need not look them
        up."""
        words = self.in_words(notation)
        try:
            move = kc.parse_move(notation)
        except ValueError:
            return words
        if isinstance(move, kc.Lose) and state.loss is not None:
            return gettext("%(move)s (%(dp)d DP)", move=words,
                           dp=kc.lost_dp(state, state.loss.target, move.cards))
        return words

    def goods(self, gold: int, cards) -> str:
        """'5 gold, Village, Town' in the reader's words; 'nothing'."""
        parts = [ngettext("%(num)d gold", "%(num)d gold", gold)] if gold else []
        parts += [self.card_name(c) for c in cards]
        return ", ".join(parts) if parts else gettext("nothing")

    def default_move(self, state: kc.GameState) -> str:
        """The readings' move for a seat that missed its deadline (docs/rules-notes.md, K15)."""
        return str(kc.default_move(state))

    bots = BOT_NAMES

    def bot_move(self, state: kc.GameState, bot: str, seed: str) -> str:
        """The move computer player `bot` makes for the seat to move (the turn's player, or the
        seat a loss or an offer asks): it is handed that seat's view only, never the state."""
        if state.is_over:
            raise MoveError(gettext("the game is over; no more moves can be made"))
        return str(choose_move(bot, kc.view_for(state, state.to_move), random.Random(seed)))

    # --- what a seat sees -----------------------------------------------------------------

    def view(self, state: kc.GameState, seat: int | None) -> kc.SeatView:
        return kc.view_for(state, seat)

    def view_dict(self, state: kc.GameState, seat: int | None) -> dict:
        return self._views(state, seat)

    @staticmethod
    def _view_dict(state: kc.GameState, seat: int | None) -> dict:
        return kc.view_for(state, seat).to_dict()

    def board_picture(self, state: kc.GameState, seat: int | None,
                      interactive: bool = False, move: kc.Move | None = None) -> str:
        """Every tableau as one <svg>, from `seat`'s view (None: a spectator's)."""
        view = kc.view_for(state, seat)
        who = gettext("a spectator") if seat is None else i18n.colour(state.players[seat])
        title = (gettext("The tableaus as they will be after your move %(move)s",
                         move=self.in_words(str(move)))
                 if move is not None else
                 gettext("Every player's cards in play after %(moves)d moves, as %(who)s sees "
                         "them", moves=state.ply, who=who))
        return tableau_svg(view, title, words=i18n.render)

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
        winners = gettext(" and ").join(i18n.colour(state.players[s]) for s in result.winners)
        return [gettext("The game is over: %(reason)s.", reason=i18n.render(result.reason)),
                gettext("Gold: %(gold)s", gold=", ".join(
                    f"{i18n.colour(p)} {g}" for p, g in zip(state.players, state.gold))),
                ngettext("Winner: %(names)s.", "Winners: %(names)s.", len(result.winners),
                         names=winners)]

    def result_table(self, state: kc.GameState) -> ResultTable | None:
        """The result in one table: each seat's gold (the only score) and rank; players with
        equal gold share the place, as the rules break no tie. None while the game goes on."""
        result = kc.outcome(state)
        if result is None:
            return None
        ranks = tuple(1 + sum(1 for other in result.gold if other > result.gold[s])
                      for s in state.seats)
        tie_break = None
        if len(result.winners) > 1:
            tie_break = gettext(
                "%(names)s tie with %(gold)s; the rules break no tie, so they share the win.",
                names=gettext(" and ").join(i18n.colour(state.players[s])
                                            for s in result.winners),
                gold=ngettext("%(num)d gold", "%(num)d gold", max(result.gold)))
        notes = (gettext("Gold is the only score: whoever holds the most when the last card is "
                         "drawn from the deck wins."),)
        return ResultTable(
            colours=state.players, parts=(), totals=result.gold, tie_label=None, tie_values=(),
            ranks=ranks, winners=result.winners, reason=i18n.render(result.reason),
            tie_break=tie_break, notes=notes, rules_url=RULES_URL, total_label=gettext("Gold"))

    def dice_lines(self, view) -> list[str]:
        """The dice rolled so far, said for what they were: the roll for the start seat, then
        the rolls in play (a caravan's gold, a disaster's or a war's defence points)."""
        colour = i18n.colour
        lines = []
        rounds = start_rolls(view)
        if rounds:
            lines.append(gettext(
                "Start roll (each player rolls a die, the highest starts, tied players roll "
                "again): %(rolls)s; %(player)s starts.",
                rolls="; ".join(", ".join(f"{colour(view.players[s])} {r}" for s, r in one)
                                for one in rounds),
                player=colour(view.players[view.start])))
        played = view.dice[sum(len(one) for one in rounds):]
        if played:
            shown = played[-10:]
            if len(played) > len(shown):  # say that the earlier rolls are left out
                lines.append(gettext("Dice rolled in play (caravans, disasters, wars): the "
                                     "last %(num)d of %(total)d, the latest last: %(dice)s.",
                                     num=len(shown), total=len(played),
                                     dice=" ".join(map(str, shown))))
            else:
                lines.append(gettext("Dice rolled in play (caravans, disasters, wars), the "
                                     "latest last: %(dice)s.", dice=" ".join(map(str, shown))))
        return lines

    def position_lines(self, state: kc.GameState, seat: int | None) -> list[str]:
        """The position as plain text for `seat`, in the reader's language: what a mail or a
        turn file shows."""
        view = kc.view_for(state, seat)
        colour = i18n.colour
        lines = []
        if view.hand is not None:  # a seat's view
            mine = cast(int, seat)
            lines.append(gettext("Your hand (%(colour)s): %(cards)s",
                                 colour=colour(state.players[mine]),
                                 cards=i18n.render(hand_words(state.hands[mine]))))
        if view.choice:
            lines.append(gettext("Scholastics drew %(cards)s: keep one.",
                                 cards=_names(view.choice)))
        if not state.is_over:
            lines.append(gettext("Round %(round)d, %(player)s's turn, %(phase)s; to move: "
                                 "%(mover)s.", round=state.round,
                                 player=colour(state.players[view.current]),
                                 phase=i18n.render(phase(view.phase)),
                                 mover=colour(state.players[cast(int, view.to_move)])))
        deck = ngettext("Deck: %(num)d card.", "Deck: %(num)d cards.", view.deck_size)
        if view.discard:
            pile = ngettext("Discard pile: %(num)d card, the latest %(cards)s.",
                            "Discard pile: %(num)d cards, the latest %(cards)s.",
                            len(view.discard), cards=_names(view.discard[-5:]))
        else:
            pile = gettext("Discard pile: empty.")
        lines.append(f"{deck} {pile}")
        lines.extend(self.dice_lines(view))
        if view.loss:
            loss = view.loss
            what = (gettext("%(roll)d DP of cards in play", roll=loss["roll"])
                    if not loss["kinds"] else
                    gettext("one %(cards)s", cards=gettext(" or ").join(
                        i18n.render(name(k)) for k in loss["kinds"])))
            lines.append(gettext("%(target)s must lose %(what)s (%(card)s by %(by)s).",
                                 target=colour(loss["target"]), what=what,
                                 card=i18n.render(name(loss["card"])), by=colour(loss["by"])))
        if view.offer:
            offer = view.offer
            lines.append(gettext("Open offer from %(giver)s to %(taker)s: %(give)s for "
                                 "%(ask)s.", giver=colour(offer["from"]),
                                 taker=colour(offer["to"]),
                                 give=self.goods(offer["give_gold"], offer["give"]),
                                 ask=self.goods(offer["ask_gold"], offer["ask"]))
                         if "give" in offer else
                         gettext("Open offer from %(giver)s to %(taker)s.",
                                 giver=colour(offer["from"]), taker=colour(offer["to"])))
        for s, player in enumerate(state.players):
            in_play = ", ".join(f"{i18n.render(name(c))} x{view.tableau[s].count(c)}"
                                for c in sorted(set(view.tableau[s]), key=INDEX.__getitem__))
            line = ngettext("%(colour)s: gold %(gold)d, DP %(dp)d, revenue %(revenue)d, "
                            "%(num)d card in hand; in play: %(cards)s",
                            "%(colour)s: gold %(gold)d, DP %(dp)d, revenue %(revenue)d, "
                            "%(num)d cards in hand; in play: %(cards)s",
                            view.hand_sizes[s], colour=colour(player), gold=view.gold[s],
                            dp=view.dp[s], revenue=view.revenue[s],
                            cards=in_play or gettext("nothing"))
            if view.shared[s]:
                line = gettext("%(line)s; shared %(cards)s", line=line,
                               cards=_names(view.shared[s]))
            lines.append(line)
        return lines

    # --- the seat page's move form ----------------------------------------------------------

    def move_from_form(self, state: kc.GameState, form: Mapping[str, Any]) -> str:
        """The notation of the move a seat chose on its page; MoveError says what is missing."""
        action = str(form.get("action", ""))
        if action in ("text", "move"):
            text = str(form.get("notation" if action == "text" else "move", "")).strip()
            if not text:
                raise MoveError(gettext("type a move in the box, for example 'done'"))
            return text[:MAX_NOTATION_LENGTH + 1]
        if action != "offer":
            raise MoveError(gettext("choose a move from the list, make an offer, or type a "
                                    "move"))
        target = str(form.get("target", ""))
        if target not in state.players:
            raise MoveError(gettext("choose the player to make the offer to"))
        sides = []
        for side in ("give", "ask"):
            raw = str(form.get(f"{side}_gold", "0") or "0").strip()
            if not (raw.isascii() and raw.isdigit()) or len(raw) > 6:
                raise MoveError(gettext("the gold you give must be a whole number")
                                if side == "give" else
                                gettext("the gold you ask for must be a whole number"))
            cards = str(form.get(f"{side}_cards", "")).strip()[:MAX_NOTATION_LENGTH]
            parts = ([f"{int(raw)} gold"] if int(raw) else []) + ([cards] if cards else [])
            sides.append(", ".join(parts) or "nothing")
        return f"offer {target}: {sides[0]} for {sides[1]}"

    # --- for the templates -------------------------------------------------------------------

    @staticmethod
    def card_name(card: str) -> str:
        """A card's printed name in the reader's language."""
        return i18n.render(name(card))

    @staticmethod
    def card_names(cards) -> list[str]:
        return [i18n.render(name(c)) for c in cards]

    @staticmethod
    def phase_name(step_phase: str) -> str:
        """A phase ('draw') as the reader says it ('draw phase')."""
        return i18n.render(phase(step_phase))

    @staticmethod
    def hand_words(state: kc.GameState, seat: int) -> str:
        """A seat's hand in words: for the admin's page only (it shows every secret)."""
        return i18n.render(hand_words(state.hands[seat]))

    @staticmethod
    def tableau_words(state: kc.GameState, seat: int) -> str:
        return i18n.render(hand_words(state.tableau[seat]))

    @staticmethod
    def deck_words(state: kc.GameState) -> str:
        return (", ".join(i18n.render(KINDS[k].name) for k in reversed(state.deck))
                or gettext("empty"))
