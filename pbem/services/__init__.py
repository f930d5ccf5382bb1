"""Floor 2, the service layer: the only place where the games and the database meet.

Every channel (the pages, the API, players' mail, the scheduler, the command line) acts
through these modules, and every move through one path: `moves.submit_move`. Owns creating
games and their players (game_settings: the one reader of the forms that make a game), seats
and their links, the move path and the mails it causes, the log, time and vacation, deadlines
and what a passing one does (timeouts), the events that follow a move and who listens to them
(events; registered below), stewardship (the organisers' actions), the table talk, games
players start (starting), "my games", bounces of the server's mail, turn files, turns as
players count them, the server's health, what the pages of spectators (watching), of the
admins (admin_views) and of the demo's mailbox (mailbox) read, what players' mail coming in
reads and answers (replies), and composing mail (mail/: the table of mail kinds, kinds.py, and
the one way to queue one, sending.send; delivered by pbem.scheduler).

Imports pbem.games and pbem.ground only; never a channel (web, mailin, scheduler, cli).
"""

# Who listens to what (pbem.services.events): registered here, when the first service is
# imported, however the services are entered (the pages, the scheduler, the command line,
# mail in, a test calling a service); the publishers import none of their listeners.
from . import events, ratings, reviews, timeouts, tournaments, undo
from .mail import listeners as mail_listeners

events.subscribe(events.GameFinished, ratings.on_game_finished)
events.subscribe(events.GameFinished, tournaments.on_game_finished)
events.subscribe(events.GameFinished, reviews.on_game_finished)
events.subscribe(events.TurnTimedOut, timeouts.on_turn_timed_out)
events.subscribe(events.UndoOvertaken, undo.on_undo_overtaken)
events.subscribe(events.SeatHandedOver, mail_listeners.on_seat_handed_over)
