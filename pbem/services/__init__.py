"""Floor 2, the service layer: the only place where the games and the database meet.

Every channel (the pages, the API, players' mail, the scheduler, the command line) acts
through these modules, and every move through one path: `moves.submit_move`. Owns creating
games and their players (game_settings: the one reader of the forms that make a game), seats
and their links, the move path and the mails it causes, the log, time and vacation, deadlines, stewardship (the organisers' actions), the table talk,
games players start (starting), "my games", bounces of the server's mail, turn files, turns
as players count them, the server's health, and composing mail (mail/: what each mail says,
to whom, with which links; queued in the outbox, delivered by pbem.scheduler).

Imports pbem.games and pbem.ground only; never a channel (web, mailin, scheduler, cli).
"""
