"""The Flask API: an app factory and a blueprint per resource, a thin adapter over the
``service`` layer. It sends grading tasks by name and never imports ``workers``.

    gunicorn 'api:create_app()'
"""

from api.app import create_app

__all__ = ["create_app"]
