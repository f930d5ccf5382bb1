"""The WSGI entry point for a production server, e.g. `gunicorn -w 4 wsgi:app`."""

from pbem import create_app, started

app = create_app()
started()
