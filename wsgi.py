"""The WSGI entry point for a production server: `gunicorn -w 4 -b 127.0.0.1:8000 wsgi:app`
(docs/deploy.md, deploy/systemd/pbem-web.service), behind nginx; gunicorn.conf.py beside it
keeps gunicorn on loopback unless told otherwise. Each worker makes the app, logs as every pbem
process does (pbem.logs: time, level, logger, no secrets, `[log] level`, the settings read),
refuses to start on a database whose schema is not the code's (before `pbem init-db` after an
upgrade), and freezes what start-up made (pbem.started)."""

import sys

from pbem import create_app, started
from pbem.ground import logs, schema

# gunicorn's WORKER_BOOT_ERROR: its master stops ("Worker failed to boot.") instead of starting
# workers again and again, and the service manager sees the web server fail.
REFUSED = 3

app = create_app()
logs.setup(app.config, "web (gunicorn worker)")
if schema.check_at_start(app, "web (gunicorn worker)"):
    sys.exit(REFUSED)
started()
