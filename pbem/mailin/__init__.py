"""Floor 3, a channel: players' mail coming in. Owns reading a mail and acting on it
(inbox.handle_incoming: orders, talk, bounces, answers), the SMTP listener and the IMAP poller
(listener), and the mail server's pipe (pipe: `pbem ingest-mail`).

Imports pbem.services, pbem.games and pbem.ground; never another channel (web, scheduler,
cli). Kept light at import: `pbem ingest-mail` hands a mail over without loading the app.
"""
