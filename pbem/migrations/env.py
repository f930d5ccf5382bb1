"""Alembic's entry point: runs the migrations on the engine the app passes in."""

from alembic import context
from sqlmodel import SQLModel

from pbem import models  # noqa: F401  (the tables register themselves on SQLModel.metadata)

engine = context.config.attributes.get("engine")
if engine is None:  # run by the `alembic` command itself: use the configured database
    from pbem import create_app
    from pbem.db import get_engine

    engine = get_engine(create_app())

# BEGIN IMMEDIATE (pbem.db): a second `init-db` started at the same moment waits for the
# first to finish, then finds the schema up to date, instead of failing with "locked".
# transactional_ddl: all migrations in that one transaction. Alembic otherwise commits after
# each migration on SQLite, which lets a second process read the version in between and run
# the later migrations a second time ("table ... already exists").
with engine.execution_options(pbem_write=True).connect() as connection:
    context.configure(connection=connection, target_metadata=SQLModel.metadata,
                      render_as_batch=True, compare_type=True, transactional_ddl=True)
    with context.begin_transaction():
        context.run_migrations()
    connection.commit()
