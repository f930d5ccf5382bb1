"""Every player's tableau as one SVG picture, drawn from a `SeatView` (so it can show only what
its reader may see: cards in play and advances are public, hands are not drawn at all).

One row a seat: its colour, gold, DP and revenue, then a card for each kind it has in play with
the count, resources and leaders first, then its advances (shared ones outlined).
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape

from ..words import Phrase, colour, say, say_n
from .cards import ADVANCE, INDEX, KINDS, LEADER
from .view import SeatView

ROW, CARD_W, CARD_H, LEFT = 74, 74, 52, 190
FILL = {"resource": "#f3e9d2", LEADER: "#dfe8f5", ADVANCE: "#e3f1df"}
INK = {"yellow": "#b08a00", "red": "#b3261e", "green": "#2e7d32", "purple": "#6a1b9a",
       "blue": "#1565c0", "orange": "#d35400"}


def tableau_svg(view: SeatView, title: str, words: Callable[[Phrase], str] = str) -> str:
    """The picture as one <svg> element with a <title> and a text alternative per row.

    `words` writes the picture's words (Phrases) in the reader's language; the default, `str`,
    writes them in English."""
    # Room for 8 cards a row at least, so that a page scaling the picture to its width does
    # not blow up a table with little in play.
    cells = max([8] + [len(set(t)) + len(s) for t, s in zip(view.tableau, view.shared)])
    width = LEFT + cells * (CARD_W + 6) + 10
    height = ROW * len(view.players) + 10
    out = [(f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
            f'width="{width}" height="{height}" role="img" aria-labelledby="kc-title">'),
           f'<title id="kc-title">{escape(title)}</title>',
           ('<style>text{font-family:sans-serif;font-size:12px}.n{font-size:11px}'
            '.c{font-weight:bold;font-size:14px}</style>')]
    for s, seat_colour in enumerate(view.players):
        y = 5 + s * ROW
        who = words(colour(seat_colour))
        if s == view.seat:
            who = words(say("%(who)s (you)", who=colour(seat_colour)))
        turn = words(say(" ◀ to move")) if s == view.to_move else ""
        figures = words(say("gold %(gold)d, DP %(dp)d, revenue %(revenue)d", gold=view.gold[s],
                            dp=view.dp[s], revenue=view.revenue[s]))
        out.append(f'<g aria-label="{escape(who)}: {escape(figures)}">')
        out.append(f'<rect x="2" y="{y}" width="{width - 4}" height="{ROW - 6}" rx="6" '
                   f'fill="none" stroke="{INK.get(seat_colour, "#444")}" stroke-width="2"/>')
        out.append(f'<text class="c" x="10" y="{y + 20}" fill="{INK.get(seat_colour, "#444")}">'
                   f'{escape(who)}{escape(turn)}</text>')
        out.append(f'<text x="10" y="{y + 40}">'
                   + escape(words(say("gold %(gold)d · DP %(dp)d · revenue %(revenue)d",
                                      gold=view.gold[s], dp=view.dp[s],
                                      revenue=view.revenue[s]))) + '</text>')
        hand = say_n("hand %(num)d card", "hand %(num)d cards", view.hand_sizes[s])
        if view.unsupported[s]:
            hand = say("%(hand)s · %(count)d unsupported", hand=hand, count=view.unsupported[s])
        out.append(f'<text class="n" x="10" y="{y + 58}">{escape(words(hand))}</text>')
        kinds = sorted(set(view.tableau[s]), key=INDEX.__getitem__)
        items = [(k, view.tableau[s].count(k), False) for k in kinds]
        items += [(k, 1, True) for k in view.shared[s]]
        for i, (card, count, shared) in enumerate(items):
            x = LEFT + i * (CARD_W + 6)
            kind = KINDS[INDEX[card]]
            dash = ' stroke-dasharray="4 3"' if shared else ""
            out.append(f'<rect x="{x}" y="{y + 6}" width="{CARD_W}" height="{CARD_H}" rx="4" '
                       f'fill="{FILL.get(kind.type, "#eee")}" stroke="#555"{dash}/>')
            label = words(kind.name).split()
            for j, word in enumerate(label[:2]):
                out.append(f'<text class="n" x="{x + 5}" y="{y + 22 + j * 13}">'
                           f'{escape(word)}</text>')
            note = words(say("shared")) if shared else f"× {count}"
            out.append(f'<text class="c" x="{x + 5}" y="{y + 52}">{escape(note)}</text>')
        out.append("</g>")
    out.append("</svg>")
    return "".join(out)
