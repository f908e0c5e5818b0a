"""The application: one Flask app from three siblings over the service layer.

:func:`create_app` (:mod:`app.factory`) reads the settings, builds the shared objects
once per process (:mod:`app.services`), installs what every request and page shares
(limits, page sessions, headers), and includes each sibling by name: the REST API
(:mod:`api`), the pages (:mod:`web`) and the LTI endpoints (:mod:`lti.views`). The
siblings import this package, never each other.

    gunicorn 'app:create_app()'
"""

from app.factory import create_app

__all__ = ["create_app"]
