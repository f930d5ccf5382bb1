"""The engine's errors: each message is written for the person who caused it."""


class NotationError(ValueError):
    """A move written in the text notation (or sent as data) that cannot be read."""


class IllegalMoveError(ValueError):
    """A well-formed move that the rules do not allow in this position."""


class BoardError(ValueError):
    """A board file that is not a valid board."""


class StateError(ValueError):
    """A serialized game or position that cannot be loaded."""


class SetupError(ValueError):
    """Options for a new game that the rules do not allow (player count, colours, start seat)."""
