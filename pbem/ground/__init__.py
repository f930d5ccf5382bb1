"""Floor 0, the ground: what everything else stands on.

Owns storage (db: the engine, sessions, write transactions; models: the tables; rows: plain
rows for the move path; schema and migrations/: the schema's versions; transfer: export and
import), the clock and time zones (clock), the settings and the settings line every process
prints (config), the words in three languages (i18n), link keys (tokens), small caches (kept),
logging (logs) and what a process does once started (process).

Imports nothing of pbem above it: no games, no services, no mail, no Flask blueprints.
"""
