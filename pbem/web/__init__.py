"""Floor 3, a channel: the web. Owns the blueprints (pages, a seat's page, the JSON API, the
admin's pages, "my games", games players start, watching a game, the mailbox of a local mail
folder) and what every page shares (site: CSRF, headers, error pages, template helpers).

Imports pbem.services, pbem.games and pbem.ground; never another channel (mailin, scheduler,
cli): a page that wants mail sent asks the sender thread by `site.wake_sender`.
"""
