"""The blueprint ``instructor`` that the instructor pages' modules add their routes to,
and what they share."""

from __future__ import annotations

from collections.abc import Iterable

from flask import Blueprint, Response

from app.sessions import Principal
from service.submitting import Refused
from web.access import PageError, http_error, instructor

bp = Blueprint("instructor", __name__, template_folder="../templates")
bp.register_error_handler(Exception, http_error)


def refusal(exc: Exception) -> tuple[int, str]:
    """An upload's refusal as the page shows it: the status and the sentence."""
    return (exc.status, exc.detail) if isinstance(exc, Refused) else (422, str(exc))


def key_instructor() -> Principal:
    """An instructor signed in with an API key (the tenant's problems are theirs); an
    LTI instructor is refused, told how to sign in."""
    who = instructor()
    if who.via != "key":
        raise PageError(403, "Sign in with a key", "Problem sets are managed signed in "
                        "with an instructor's API key.")
    return who


def download(body: Iterable[str], mimetype: str, filename: str) -> Response:
    """A file to save (an export), streamed from ``body``."""
    return Response(body, mimetype=mimetype, headers={
        "Content-Disposition": f'attachment; filename="{filename}"'})
