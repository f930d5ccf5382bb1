"""The preview of a Kardinal & König move (engine.kardinal_koenig.foretell), in words."""

import engine.kardinal_koenig as kk


def test_an_exchange_preview_tells_the_draw_back_once():
    """An exchange is a discard and then one card drawn back: the preview says the discard,
    then the draw back once (it said 'and then draw one card' and 'Then you draw 1 card back'
    both)."""
    state = kk.new_game(4, "foretell-exchange")
    exchange = next(m for m in kk.legal_moves(state) if isinstance(m, kk.Exchange))
    lines = [str(line) for line in kk.foretell(state, exchange, kk.apply_move(state, exchange))]
    assert lines[0].startswith("You will discard ") and lines[0].endswith(").")
    assert [line for line in lines if "draw" in line] == [
        "Then you draw 1 card back, one at a time, from the deck or the face-up cards."]
