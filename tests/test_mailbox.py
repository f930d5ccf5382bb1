"""The mailbox page of the local mail backend: every message sent, with working links."""

from server import make_app, new_game, token_in


def test_the_mailbox_lists_every_sent_message_newest_first(app, client, mailbox):
    """Each delivered message is listed, can be filtered by recipient, and opens with its link."""
    new_game(app, 3, "mailbox")
    mailbox.deliver()
    index = client.get("/mailbox/").get_data(as_text=True)
    assert index.count("You are invited to play") == 3
    only = client.get("/mailbox/?to=p1@example.org").get_data(as_text=True)
    assert only.count("You are invited to play") == 1 and "Player 1" in only
    (mail,) = mailbox.to("p1@example.org")
    name = next(p.stem for p in mailbox.folder.glob("*.eml")
                if "p1@example.org" in p.read_text())
    page = client.get(f"/mailbox/{name}").get_data(as_text=True)
    token = token_in(mail)
    assert f'<a href="http://localhost/seat/{token}">' in page
    html = client.get(f"/mailbox/{name}/html")
    assert html.status_code == 200 and token in html.get_data(as_text=True)
    assert "default-src 'none'" in html.headers["Content-Security-Policy"]


def test_mail_not_yet_delivered_is_shown_with_its_state(app, client):
    """Queued mail shows as not delivered until the sender has written it."""
    new_game(app, 3, "queued")
    page = client.get("/mailbox/").get_data(as_text=True)
    assert "Not delivered yet" in page and page.count("queued") >= 3


def test_the_mailbox_refuses_names_that_are_not_messages(client):
    """Only the numbered message files can be opened; anything else is not found."""
    for name in ("..%2Fsecret_key", "00000001", "abc", "0000000a", "00000001.eml"):
        assert client.get(f"/mailbox/{name}").status_code == 404


def test_no_mailbox_unless_mail_stays_local(tmp_path):
    """With SMTP delivery, or the page switched off, there is no mailbox page at all."""
    for config in ({"MAIL_BACKEND": "smtp"}, {"MAIL_MAILBOX_PAGE": False}):
        app = make_app(tmp_path / str(len(config)) / next(iter(config)), **config)
        client = app.test_client()
        assert client.get("/mailbox/").status_code == 404
        assert "mailbox" not in client.get("/").get_data(as_text=True).lower()


def test_the_front_page_points_newcomers_to_the_mailbox(client):
    """In the demo set-up the front page links to the mailbox."""
    page = client.get("/").get_data(as_text=True)
    assert 'href="/mailbox/"' in page


def test_request_logs_do_not_hold_seat_keys(app, client, caplog):
    """The web server's request log masks the secret in seat links."""
    import logging

    from werkzeug.serving import WSGIRequestHandler  # noqa: F401  (registers its logger)

    _, tokens = new_game(app, 3, "logs")
    with caplog.at_level(logging.INFO, logger="werkzeug"):
        logging.getLogger("werkzeug").info('"%s %s HTTP/1.1" %s -', "GET",
                                           f"/seat/{tokens[0]}", 200)
    assert "/seat/[hidden]" in caplog.text and tokens[0] not in caplog.text
