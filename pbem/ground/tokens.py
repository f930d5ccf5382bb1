"""Seat keys: the secrets in move links. 192 random bits each; only their SHA-256 is stored.

A key is high-entropy, so a fast hash is enough: nobody can guess their way to a preimage, and
an index on the hash finds the seat in one lookup. Malformed tokens are refused before any
database work, so a scanner probing URLs costs nothing.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from typing import TypeGuard

TOKEN_BYTES = 24
TOKEN_PATTERN = re.compile(r"[A-Za-z0-9_-]{32}")


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def is_well_formed(token: object) -> TypeGuard[str]:
    return isinstance(token, str) and TOKEN_PATTERN.fullmatch(token) is not None


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("ascii")).hexdigest()
