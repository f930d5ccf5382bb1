"""Floor 4, the scheduler: its one job (jobs.run_jobs: timers, talk chores, the IMAP poll,
then mail) and the delivery of mail (outbox: claims, the SMTP and local backends, retries;
senders: the helper sender processes).

Imports pbem.mailin (the IMAP poll is one of its jobs) and everything below it: services,
games, ground; never web or cli.
"""
