"""The blueprint ``instructor`` that the instructor pages' modules add their routes to,
and what they share."""

from __future__ import annotations

from flask import Blueprint

from service.submitting import Refused
from web.access import http_error

bp = Blueprint("instructor", __name__, template_folder="../templates")
bp.register_error_handler(Exception, http_error)


def refusal(exc: Exception) -> tuple[int, str]:
    """An upload's refusal as the page shows it: the status and the sentence."""
    return (exc.status, exc.detail) if isinstance(exc, Refused) else (422, str(exc))
