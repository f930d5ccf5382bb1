"""The 106 cards of Knights & Castles as data: kinds, counts, revenue, defence points, support.

A card is identified by its kind's index into `KINDS` (0..34); every card of one kind is the
same. Hands and tableaus are count vectors over these indices. This module knows the cards and
the arithmetic of support, defence and revenue; it knows nothing of turns (that is `rules`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..words import Phrase, say

RESOURCE, LEADER, ADVANCE, INVASION, DISASTER, EVENT = (
    "resource", "leader", "advance", "invasion", "disaster", "event")


@dataclass(frozen=True, slots=True)
class Kind:
    """One kind of card: its id in the notation (`trade-route`), its printed name, its type,
    how many the deck holds, and for resources and leaders revenue, DP and what supports it."""

    id: str
    name: Phrase  # its English name, which a server translates
    type: str
    count: int = 1
    revenue: int = 0
    dp: int = 0
    needs: str | None = None  # the id of the kind that supports it; None: nothing


KINDS: tuple[Kind, ...] = (
    Kind("village", say("Village"), RESOURCE, 30, 0, 1),
    Kind("town", say("Town"), RESOURCE, 9, 1, 2, "village"),
    Kind("mine", say("Mine"), RESOURCE, 6, 2, 1, "village"),
    Kind("castle", say("Castle"), RESOURCE, 9, 0, 3, "village"),
    Kind("city", say("City"), RESOURCE, 6, 3, 3, "town"),
    Kind("knights", say("Knights"), RESOURCE, 9, 0, 3, "castle"),
    Kind("ships", say("Ships"), RESOURCE, 6, 1, 3, "city"),
    Kind("trade-route", say("Trade Route"), RESOURCE, 4, 4, 1, "ships"),
    Kind("bishop", say("Bishop"), LEADER, 1, 2, 0, "city"),
    Kind("prince", say("Prince"), LEADER, 1, 2, 1, "city"),
    Kind("duke", say("Duke"), LEADER, 1, 1, 2, "city"),
    Kind("artist", say("Artist"), LEADER, 1, 1, 0, "city"),
    Kind("inventor", say("Inventor"), LEADER, 1, 1, 1, "city"),
    Kind("crop-rotation", say("Crop Rotation"), ADVANCE),
    Kind("cartography", say("Cartography"), ADVANCE),
    Kind("printing-press", say("Printing Press"), ADVANCE),
    Kind("gun-powder", say("Gun Powder"), ADVANCE),
    Kind("masonry", say("Masonry"), ADVANCE),
    Kind("irrigation", say("Irrigation"), ADVANCE),
    Kind("scholastics", say("Scholastics"), ADVANCE),
    Kind("mongols", say("Mongols"), INVASION),
    Kind("vikings", say("Vikings"), INVASION),
    Kind("saracens", say("Saracens"), INVASION),
    Kind("moors", say("Moors"), INVASION),
    Kind("celts", say("Celts"), INVASION),
    Kind("plague", say("Plague"), DISASTER),
    Kind("pestilence", say("Pestilence"), DISASTER),
    Kind("famine", say("Famine"), DISASTER),
    Kind("epidemic", say("Epidemic"), DISASTER),
    Kind("volcanic-eruption", say("Volcanic Eruption"), DISASTER),
    Kind("caravan", say("Caravan"), EVENT),
    Kind("storm-at-sea", say("Storm at Sea"), EVENT),
    Kind("untimely-end", say("Untimely End"), EVENT),
    Kind("crusades", say("Crusades"), EVENT),
    Kind("mined-out", say("Mined Out"), EVENT),
)
N_KINDS = len(KINDS)
DECK_SIZE = sum(k.count for k in KINDS)
INDEX = {k.id: i for i, k in enumerate(KINDS)}
ID = tuple(k.id for k in KINDS)

(VILLAGE, TOWN, MINE, CASTLE, CITY, KNIGHTS, SHIPS, TRADE_ROUTE,
 BISHOP, PRINCE, DUKE, ARTIST, INVENTOR,
 CROP_ROTATION, CARTOGRAPHY, PRINTING_PRESS, GUN_POWDER, MASONRY, IRRIGATION, SCHOLASTICS,
 ) = range(20)
CARAVAN, STORM_AT_SEA, UNTIMELY_END, CRUSADES, MINED_OUT = range(30, 35)

BUILDABLE = tuple(i for i, k in enumerate(KINDS) if k.type in (RESOURCE, LEADER))
LEADERS = tuple(i for i, k in enumerate(KINDS) if k.type == LEADER)
ADVANCES = tuple(i for i, k in enumerate(KINDS) if k.type == ADVANCE)
# Cards played in the event phase (one a turn): events, disasters and invasions.
EVENT_CARDS = tuple(i for i, k in enumerate(KINDS) if k.type in (EVENT, DISASTER, INVASION))
# The single-kind events: the target discards one card of this kind (any leader: its choice).
DISCARD_ONE = {STORM_AT_SEA: (SHIPS,), UNTIMELY_END: LEADERS, CRUSADES: (KNIGHTS,),
               MINED_OUT: (MINE,)}

# Support groups (readings, "Support is counting"): the kinds a group's supporter carries,
# and how many it carries each. The village group's capacity depends on Irrigation.
GROUPS: tuple[tuple[tuple[int, ...], int, int], ...] = (
    ((TOWN, MINE, CASTLE), VILLAGE, 1),
    ((CITY,), TOWN, 1),
    ((KNIGHTS,), CASTLE, 2),
    ((SHIPS,), CITY, 2),
    (LEADERS, CITY, 1),
    ((TRADE_ROUTE,), SHIPS, 1),
)
GROUP_OF = {kind: g for g, (kinds, _, _) in enumerate(GROUPS) for kind in kinds}


def capacity(group: int, tableau: Sequence[int], irrigation: bool) -> int:
    """How many cards of `group` the tableau's supporters carry."""
    _, supporter, each = GROUPS[group]
    n = tableau[supporter]
    if group == 0 and irrigation:
        return n // 2 * 3 + n % 2  # every 2 villages support 3; an odd village 1
    return n * each


def excess(tableau: tuple[int, ...], irrigation: bool,
           paid: tuple[int, ...] = ()) -> list[int]:
    """For each support group, how many of its cards are unsupported (0 when all are).

    Cards in `paid` (kind indices, kept for 1 gold this build phase) need no support.
    """
    out = []
    for g, (kinds, _, _) in enumerate(GROUPS):
        used = sum([tableau[k] for k in kinds])
        if paid:
            used -= sum([1 for k in paid if GROUP_OF.get(k) == g])
        out.append(max(0, used - capacity(g, tableau, irrigation)))
    return out


def dp_of(kind: int, gun_powder: bool, masonry: bool) -> int:
    """A card's defence points, with the owner's advances."""
    dp = KINDS[kind].dp
    if gun_powder and kind in (KNIGHTS, SHIPS):
        dp += 1
    if masonry and kind in (CASTLE, CITY):
        dp += 1
    return dp


def revenue_of(tableau: Sequence[int], cartography: bool, crop_rotation: bool) -> int:
    """The gold a tableau yields in a tax phase."""
    total = sum(KINDS[k].revenue * tableau[k] for k in BUILDABLE)
    if cartography:
        total += tableau[SHIPS]
    if crop_rotation:
        total += tableau[VILLAGE] // 2
    return total


def value(kind: int) -> tuple[int, int, int]:
    """How much a seat that missed its deadline wants to keep a card, lowest first: the revenue
    it yields in play (advances: their price, 5; events, disasters and invasions: 0), then its
    DP, then its place in the card list (a fixed tie-break)."""
    k = KINDS[kind]
    worth = 5 if k.type == ADVANCE else k.revenue
    return worth, k.dp, -kind


def counts_to_ids(counts: tuple[int, ...]) -> list[str]:
    """A count vector as card ids in card-list order, one per card."""
    return [ID[k] for k, n in enumerate(counts) for _ in range(n)]
