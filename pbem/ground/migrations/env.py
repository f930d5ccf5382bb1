"""Alembic's entry point: runs the migrations on the engine the app passes in."""

from alembic import context
from sqlmodel import SQLModel

from pbem.ground import models  # noqa: F401  (the tables register themselves on SQLModel.metadata)

engine = context.config.attributes.get("engine")
if engine is None:  # run by the `alembic` command itself: use the configured database
    from pbem import create_app
    from pbem.ground.db import get_engine

    engine = get_engine(create_app())

# A second `init-db` started at the same moment waits for the first to finish, then finds the
# schema up to date, instead of failing: on SQLite through BEGIN IMMEDIATE (pbem.ground.db), on
# PostgreSQL through a lock held until the migrations' transaction ends. All migrations run in
# that one transaction: SQLite's DDL is transactional too, though Alembic assumes it is not and
# would otherwise commit after each migration, letting a second `init-db` in between them.
MIGRATION_LOCK = 7_240_917  # any number; the same in every process

with engine.execution_options(pbem_write=True).connect() as connection:
    context.configure(connection=connection, target_metadata=SQLModel.metadata,
                      render_as_batch=True, compare_type=True, transactional_ddl=True)
    with context.begin_transaction():
        if connection.dialect.name == "postgresql":
            connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})")
        context.run_migrations()
    connection.commit()
