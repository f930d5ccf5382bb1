"""The refusals of the service layer: each a ServiceError, whose `status` is the HTTP status
the web layer answers with and whose `message` is for the person who asked."""

from __future__ import annotations

from ..games import SetupProblem


class ServiceError(Exception):
    """A request the service refuses; `status` is the HTTP status the web layer answers with."""

    status = 400

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class Malformed(ServiceError):
    status = 400


class NotFound(ServiceError):
    status = 404


class StaleTurn(ServiceError):
    status = 409


class NotYourTurn(ServiceError):
    status = 409


class GameNotRunning(ServiceError):
    status = 409


class Rejected(ServiceError):
    status = 422


class LinkExpired(NotFound):
    status = 410


class TooMany(ServiceError):
    """More of something (invitations, link requests, lobby games) than a day allows."""

    status = 429


MAX_REASON = 500


def check_reason(reason: object) -> str:
    """An organiser's reason for an action, for the audit log: said, and not too long."""
    reason = str(reason or "").strip()
    if not reason:
        raise Malformed("say why, in a few words: it goes into the audit log")
    if len(reason) > MAX_REASON:
        raise Malformed(f"keep the reason under {MAX_REASON} characters")
    return reason


class SettingsError(SetupProblem):
    """A game setting refused; `field` names the form input it is about, so every form shows
    the message beside that input whatever language the message is in."""

    def __init__(self, message: str, *, field: str):
        super().__init__(message)
        self.field = field
