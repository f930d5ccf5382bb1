"""The strong Knights & Castles bot: from its seat's view alone, a legal answer to every kind of
decision (a disaster's losses and offers included), offers of its own that are legal and
bounded, and sound choices in plain positions."""

from __future__ import annotations

import random

from kc_support import play, position
from test_kc_view import redeal

import engine.knights_castles as kc
from engine.knights_castles.bots import BOT_NAMES, choose_move, strong
from engine.knights_castles.bots.players import greedy_move, worth
from engine.knights_castles.bots.policy import has_room, margins
from engine.knights_castles.bots.strong import (
    ARMOR,
    MAX_OFFERS,
    SAMPLES,
    SAMPLES_NOISY,
    candidate_moves,
    random_beliefs,
    strong_bot,
    trade_offers,
)
from engine.knights_castles.cards import INDEX
from engine.knights_castles.moves import Accept, Offer
from engine.knights_castles.rules import replace
from engine.knights_castles.state import (
    ANSWER,
    BUILD,
    BUY,
    END,
    EVENT,
    KEEP,
    LOSS,
    RESEARCH,
    TRADE,
    UPKEEP,
)


def _strong(state, seed=1):
    return choose_move("strong", kc.view_for(state, state.to_move), random.Random(seed))


def test_strong_is_listed_with_the_games_bots():
    """The server offers the bots the game lists: strong is one of them."""
    assert "strong" in BOT_NAMES


def _quick_strong(view, rng):
    """strong as it plays, with fewer deals a decision: the same code, a third of the time."""
    return strong_bot(view, rng, samples=3)


def _seeded_games(bots: list[str], games: range, check_hidden_every: int):
    """Play whole games, the bots seated in order; yield (state, move) for every decision a
    strong seat made (with `_quick_strong`). Every `check_hidden_every`-th of them is also asked
    again with every card it cannot see dealt anew and the same random input, and must not
    change its mind."""
    asked = 0
    for number in games:
        state = kc.new_game(len(bots), f"strong-test:{number}")
        rngs = [random.Random(f"strong-test:{number}:{s}") for s in state.seats]
        while not state.is_over:
            seat = state.to_move
            view = kc.view_for(state, seat)
            if bots[seat] != "strong":
                state = kc.apply_move(state, choose_move(bots[seat], view, rngs[seat]))
                continue
            before = rngs[seat].getstate()
            move = _quick_strong(view, rngs[seat])
            if asked % check_hidden_every == 0:
                other = redeal(state, seat, random.Random(asked))
                assert kc.view_for(other, seat) == view
                again = random.Random()
                again.setstate(before)
                assert _quick_strong(kc.view_for(other, seat), again) == move, \
                    f"a different move when the hidden cards differ, at step {state.step}"
            asked += 1
            yield state, move
            state = kc.apply_move(state, move)  # raises if the move is not legal


def test_strong_answers_every_decision_legally_and_never_by_the_hidden_cards():
    """Seeded games of two strong seats and two random ones (which play disasters, invasions and
    events at them): every decision strong makes is legal (apply_move checks it), the losses
    a disaster asks included, and the same with every card hidden from it dealt anew (answers
    to offers: the next test, where strong seats make them)."""
    steps: dict[str, int] = {}
    for state, move in _seeded_games(["strong", "random", "strong", "random"], range(2), 3):
        steps[state.step] = steps.get(state.step, 0) + 1
    assert {BUY, BUILD, RESEARCH, EVENT, LOSS, TRADE} <= set(steps), steps  # ANSWER: below


def test_strong_makes_legal_bounded_offers_and_trades_happen():
    """Its offers are legal (apply_move checks), one card or gold each way, within the gold of
    the seat that pays, a card only to a seat whose cards in play cannot carry it yet, at most
    MAX_OFFERS a turn, never two to one seat; strong seats accept some (two games of two strong
    and two greedy seats: strong seats offer to both kinds and answer each other's offers)."""
    per_turn: dict[tuple[str, int, int], list[str]] = {}  # by game, seat and turn
    offers = accepted = 0
    pending = None
    for state, move in _seeded_games(["strong", "greedy", "strong", "greedy"], range(2), 4):
        if pending is not None and state.step == ANSWER and state.offer == pending:
            accepted += isinstance(move, Accept)
        pending = None
        if isinstance(move, Offer):
            offers += 1
            seat = state.current
            target = state.players.index(move.target)
            assert len(move.give) + len(move.ask) <= 1 and (move.give_gold == 0 or
                                                             move.ask_gold == 0)
            assert move.give_gold <= state.gold[seat] and move.ask_gold <= state.gold[target]
            assert not any(has_room(state, target, INDEX[card]) for card in move.give)
            per_turn.setdefault((state.seed, seat, state.turn), []).append(move.target)
            pending = move
    assert offers and accepted
    for targets in per_turn.values():
        assert len(targets) <= MAX_OFFERS and len(set(targets)) == len(targets)


# --- decisions in plain positions --------------------------------------------------------------

def test_strong_keeps_the_better_card_of_a_scholastics_pair():
    """Scholastics: of a town and a mine drawn, with a free village and 12 cards left, it keeps
    the mine (with the whole deck to come the town, which can carry a city, may be worth more:
    its play-outs can say so)."""
    state = play(position(current=1, step=TRADE, deck_top="town mine", deck_size=12,
                          tableau={0: "village scholastics"}), "done")
    assert state.step == KEEP and state.to_move == 0
    assert str(_strong(state)) == "keep mine"


def test_strong_gives_up_an_idle_castle_rather_than_pay_for_it():
    """Upkeep, 4 cards left: one village for a town (carrying a city) and a castle: the castle
    goes. greedy, judging one decision ahead, would give up the town and so the city's
    support: strong's play-outs to the end show what that costs."""
    state = play(position(tableau={0: "village town castle city"}, gold={0: 6}, deck_size=4),
                 "done")
    assert state.step == UPKEEP
    assert str(greedy_move(state)) == "abandon town"
    assert str(_strong(state)) == "abandon castle"


def test_strong_chooses_the_cheapest_losses():
    """A disaster's losses: it covers 1 DP with a village that supports nothing rather than a
    card that earns, and gives up the leader that earns least to Untimely End."""
    loss = play(position(hands={0: "plague"}, tableau={1: "3 village town mine"},
                         step=EVENT, rolls=(1,)), "play plague at red")
    assert loss.step == LOSS and loss.to_move == 1
    assert str(_strong(loss)) == "lose village"
    leader = play(position(hands={0: "untimely-end"},
                           tableau={1: "2 village 2 town 2 city bishop artist"}, step=EVENT),
                  "play untimely-end at red")
    assert str(_strong(leader)) == "lose artist"


def test_strong_accepts_a_gift_and_declines_a_bad_trade():
    """Offers to it, 3 cards before the end: 5 gold for a plague card (which can take nothing
    from its empty tableau) is taken; a village for all its gold is refused. (With the whole
    deck to come a plague in the rival's hand is no gift in a two-player game: its play-outs
    may decline that.)"""
    base = position(hands={0: "village", 1: "plague"}, gold={0: 10, 1: 10}, step=TRADE,
                    deck_size=3)
    gift = play(base, "offer red: 5 gold for plague")
    assert gift.step == ANSWER and str(_strong(gift)) == "accept"
    robbery = play(base, "offer red: village for 10 gold")
    assert str(_strong(robbery)) == "decline"


def test_strong_sells_a_card_it_cannot_use_only_to_a_seat_that_cannot_build_it_yet():
    """Trade: holding a trade route and no ships, it offers it for gold to the seat without a
    ship, never to the one whose ships could carry it at once: that seat would build it next
    turn and earn 4 gold a turn from it, more than any price greedy pays (it pays up to half
    a card's worth in hand). Before this rule, in the arena's game 28 (seed 1), it sold the
    leader a trade route for 13 gold with 42 cards to come and a bishop for 6, and lost to it 0
    to 92. With every seat able to carry it, it offers nothing."""
    state = position(3, hands={0: "trade-route"}, step=TRADE, gold={1: 20, 2: 20},
                     tableau={1: "village town city ships", 2: "3 village 3 mine"})
    offers = trade_offers(state, kc.legal_moves(state))
    assert offers and {offer.target for offer in offers} == {"green"}
    move = _strong(state)
    assert isinstance(move, Offer) and move.target == "green" and move.give == ("trade-route",)
    assert move.ask_gold >= 2 and not move.ask
    kc.apply_move(state, move)
    everyone = position(3, hands={0: "trade-route"}, step=TRADE, gold={1: 20, 2: 20},
                        tableau={1: "village town city ships", 2: "village town city ships"})
    assert trade_offers(everyone, kc.legal_moves(everyone)) == []
    assert str(_strong(everyone)) == "done"


def test_strong_builds_and_plays_its_disaster_at_the_leader():
    """It builds the card that earns most, and plays a disaster at the seat furthest ahead."""
    build = position(hands={0: "town mine"}, tableau={0: "village"})
    assert str(_strong(build)) == "build mine"
    event = position(3, hands={0: "plague"}, step=EVENT, gold={1: 5, 2: 40},
                     tableau={1: "village town", 2: "3 village 2 town mine city"})
    assert str(_strong(event)) == "play plague at green"


def test_its_own_play_counts_defence_points_in_play():
    """The bot's own judgement (its candidates, and its own moves in the play-outs) counts each
    defence point in play as ARMOR gold a turn, the rivals' too: five castles, 40 cards to
    come, Masonry in hand and 10 gold: plain greedy keeps its gold (the advance earns nothing),
    the armoured judgement researches it (+5 DP for the 20 turns left), and the strong bot
    weighs that first. Counting DP makes greedy win 27.5% rather than 22.1% of 2,000 games
    against three plain greedy bots, 80.2% rather than 78.7% against three random ones
    (bench/kc_armor.py)."""
    state = position(step=RESEARCH, hands={0: "masonry"}, gold={0: 10}, deck_size=40,
                     tableau={0: "5 village 5 castle", 1: "3 village 2 town mine"})
    turns = len(state.deck) / 2
    assert worth(state, 0, ARMOR) - worth(state, 0) == ARMOR * 20 * turns  # 5 village, 5 castle
    assert worth(state, 1, ARMOR) - worth(state, 1) == ARMOR * 8 * turns
    assert str(greedy_move(state)) == "done"
    assert str(greedy_move(state, armor=ARMOR)) == "research masonry"
    assert [str(m) for m in candidate_moves(state, kc.legal_moves(state), 5)] == [
        "research masonry", "done"]


def test_strong_builds_its_village_rather_than_hold_it_back():
    """Build phase, 60 cards to come, nothing in play: it builds its village (the castles,
    cities and knights it holds wait for one). Holding back looks as good in a play-out, whose
    greedy self builds it a turn later, but the bot held it back again turn after turn and lost
    to random players with a hand of unbuilt cards (the arena's seed 1, game 17)."""
    state = position(hands={0: "village 2 castle 2 city 2 knights celts"}, deck_size=60)
    assert {str(_strong(state, seed)) for seed in range(4)} == {"build village"}


def test_strong_discards_its_least_useful_card():
    """End: over 7 cards, it discards one it can do nothing with (Knights with no castle in
    play or in hand, or a Mined Out when no seat has a mine to lose), never a card it can build
    on its villages and earn with."""
    end = position(hands={0: "2 town 2 mine city knights mined-out"}, step=END,
                   tableau={0: "4 village", 1: "2 village town"}, deck_size=20)
    assert str(_strong(end)) in ("discard knights", "discard mined-out")


def test_strong_buys_the_card_that_ends_the_game_while_it_leads():
    """Draw phase: 2 cards left, 30 gold against 19 and red's 12 a turn: waiting lets red tax
    once more (31) before the last card is drawn; buying one card (25 left) leaves the last
    one to red's draw, which ends the game before red's tax: strong buys, and wins."""
    state = position(step=BUY, deck_size=2, gold={0: 30, 1: 19},
                     tableau={1: "6 village 6 mine"})
    move = _strong(state)
    assert str(move) == "buy"
    state = kc.apply_move(state, move)
    while not state.is_over:
        seat = state.to_move
        state = kc.apply_move(state, _strong(state) if seat == 0 else choose_move(
            "greedy", kc.view_for(state, seat), random.Random(seat)))
    assert kc.outcome(state).winners == (0,) and state.gold[0] == 25


def test_strong_refuses_a_trade_that_hands_the_other_seat_the_win():
    """An offer at the last card: red, 2 gold behind, offers a trade route for 3 gold; the
    game ends with red's draw, so the card will earn nothing and the gold decides: strong
    declines; with 40 cards left, the trade route on its free ship pays, and it accepts."""
    base = position(hands={0: "village", 1: "trade-route"}, gold={0: 12, 1: 10},
                    tableau={0: "village town city ships"}, deck_size=1, step=TRADE, current=1)
    offer = play(base, "offer yellow: trade-route for 3 gold")
    assert offer.step == ANSWER and offer.to_move == 0
    assert str(_strong(offer)) == "decline"
    early = play(replace(base, deck=base.deck + base.discard[:39],
                         discard=base.discard[39:]), "offer yellow: trade-route for 3 gold")
    assert len(early.deck) == 40 and str(_strong(early)) == "accept"  # then it pays


def test_strong_never_offers_a_trade_that_hands_the_other_seat_the_win():
    """Its own offers at the last card: none of those it weighs, nor the move it makes, would
    leave the other seat with as much gold as it has once accepted."""
    state = position(hands={0: "trade-route castle", 1: "ships"}, gold={0: 12, 1: 10},
                     tableau={0: "village town city", 1: "2 village town city ships"},
                     deck_size=1, step=TRADE)
    weighed = trade_offers(state, kc.legal_moves(state))
    made = _strong(state)
    for offer in weighed + ([made] if isinstance(made, Offer) else []):
        after = kc.apply_move(kc.apply_move(state, offer), Accept())
        assert after.gold[0] > after.gold[1], offer


def test_a_gold_of_its_own_counts_more_than_a_gold_the_leader_loses():
    """With three rivals a gold taken from the leader is not a gold won (another may win
    instead): the margin the bot judges by gains more from a gold of its own than from the
    leader's loss of one, and more from that than from the last seat's."""
    base = position(4, gold={0: 10, 1: 20, 2: 5, 3: 5}, step=TRADE)

    def gain(gold):
        return margins(replace(base, gold=gold))[0] - margins(base)[0]

    own, leader, last = gain((11, 20, 5, 5)), gain((10, 19, 5, 5)), gain((10, 20, 4, 5))
    assert own == 1 > leader > last > 0
    two = position(2, gold={0: 10, 1: 20}, step=TRADE)  # one rival: the same either way
    assert (margins(replace(two, gold=(11, 20)))[0] - margins(two)[0]
            == margins(replace(two, gold=(10, 19)))[0] - margins(two)[0] == 1)


def test_strong_reads_how_each_rival_plays_from_what_it_sees():
    """Its play-outs play each rival as `greedy` or `random` by what every seat sees of it:
    twelve rounds in, a rival with 40 gold and ten a turn of income looks greedy; one with 2
    gold, knights, and two advances bought (one shared for 10 gold) looks random; before
    anything has happened, each is as likely."""
    state = position(4, gold={1: 40, 2: 2, 3: 6}, deck_size=30, step=BUY,
                     tableau={1: "3 village 2 town 2 city mine",
                              2: "3 village castle knights crop-rotation",
                              3: "2 village town printing-press"}, shared={2: "printing-press"})
    beliefs = random_beliefs(state, 0)
    assert beliefs[0] == 0 and beliefs[1] < 0.1 and beliefs[2] > 0.9
    start = random_beliefs(position(4, deck_size=75, step=BUY), 0)
    assert all(0.4 < b < 0.6 for b in start[1:])


def test_it_deals_more_where_the_rivals_look_random(monkeypatch):
    """A build decision with several candidates: against rivals that look random (low gold, many
    advances) it plays them out over SAMPLES_NOISY deals, whose play-outs vary more; against
    rivals that look greedy (gold and income), over SAMPLES."""
    dealt = []
    deal = strong.sampled_state
    monkeypatch.setattr(strong, "sampled_state",
                        lambda view, rng: dealt.append(1) or deal(view, rng))
    noisy = position(4, hands={0: "village town mine"}, gold={1: 2, 2: 1, 3: 3}, deck_size=30,
                     tableau={0: "village", 1: "3 village castle knights crop-rotation",
                              2: "2 village gun-powder masonry",
                              3: "village irrigation scholastics"}, shared={1: "printing-press"})
    assert min(random_beliefs(noisy, 0)[1:]) > 0.9
    _strong(noisy)
    assert len(dealt) == SAMPLES_NOISY == 2 * SAMPLES
    dealt.clear()
    steady = position(4, hands={0: "village town mine"}, gold={1: 40, 2: 35, 3: 30},
                      deck_size=30, tableau={0: "village", 1: "3 village 2 town 2 city mine",
                                             2: "3 village 2 town city",
                                             3: "2 village 2 mine town"})
    assert max(random_beliefs(steady, 0)[1:]) < 0.1
    _strong(steady)
    assert len(dealt) == SAMPLES


def test_computer_strong_seats_play_the_strong_bot():
    """The server's name scheme: a `Computer (strong)` seat of a Knights & Castles game is
    accepted, and the server's move for it is strong's move from that seat's view."""
    from pbem.games import rules_for
    from pbem.services.players import bot_player

    spec = bot_player("strong", "knights-castles")
    assert (spec.name, spec.bot) == ("Computer (strong)", "strong")
    state = position(hands={0: "town mine"}, tableau={0: "village"}, deck_size=4)
    assert rules_for("knights-castles").bot_move(state, "strong", "1") == "build mine"
