"""The WSGI entry point for a production server: `gunicorn -w 4 -b 127.0.0.1:8000 wsgi:app`
(docs/deploy.md, deploy/systemd/pbem-web.service), behind nginx; gunicorn.conf.py beside it
keeps gunicorn on loopback unless told otherwise. Each worker makes the app, logs as every pbem
process does (pbem.logs: time, level, logger, no secrets, `[log] level`, the settings read),
and freezes what start-up made (pbem.started)."""

from pbem import create_app, started
from pbem.ground import logs

app = create_app()
logs.setup(app.config, "web (gunicorn worker)")
started()
