"""An assignment's dates as its LMS sends them, read again at every launch and taken
with :func:`service.terms.take_lms_dates` (a date changed in the LMS wins over the
instructor's; one the LMS sends unchanged leaves the instructor's later change alone).

Where each date comes from, the first source that gives one (:func:`resolve`):

============  ==========================================================================
``opens_at``  custom ``submission_start`` (``$ResourceLink.submission.startDateTime``),
              else ``available_start`` (``$ResourceLink.available.startDateTime``), else
              the Deep Linking item's
``due_at``    custom ``submission_end`` (``$ResourceLink.submission.endDateTime``), else
              ``canvas_due_at`` (``$Canvas.assignment.dueAt.iso8601``, an instructor's
              launch only), else the AGS line item's ``endDateTime``, else
              ``available_end`` (an LMS whose only deadline is the end of availability;
              Sakai reads it so too), else the Deep Linking item's
``late_until`` ``available_end`` (``$ResourceLink.available.endDateTime``) when it is
              after the due date, else the Deep Linking item's
============  ==========================================================================

A date of a lower source that contradicts one of a higher source (opens after due, due
after late) is left out; so is ``late_until`` with no due date anywhere.

**Custom parameters.** The tool asks for them in its registration
(:data:`CUSTOM_PARAMETERS`: Dynamic Registration's ``custom_parameters``, Canvas's
``custom_fields``); an administrator registering by hand types the same lines. A
platform that does not know a variable sends it unsubstituted (``$ResourceLink...``) or
not at all: a value that starts with ``$``, is empty, longer than
:data:`MAX_DATE_CHARS`, not ISO 8601, or has no time zone (we cannot know which one it
meant) is unset (:func:`parse`); none of them ever fails a launch.

**Canvas substitutes per student.** Canvas expands every date variable
(``ResourceLink.*`` and ``Canvas.assignment.*``) from the assignment *as it applies to
the launching user*: a student with an override (an extension, a section's own date)
gets their own date, and an instructor gets the latest effective date of any section
or student. A student's date must never become the assignment's, so on a learner's
launch from Canvas (:func:`per_student`) the substituted dates are ignored; they are
taken from instructors' launches. They are not made the student's extension either:
telling a Canvas override from the assignment's own date needs the base date, which a
student's launch does not carry, and an extension the LMS made would have to be undone
when Canvas drops it, against the instructor's own extensions here. Grant extensions
in the tool (or in Canvas *and* the tool).

**The line item** (:func:`lineitem_end`) is read only when the launch gave no due date
of its own, the AGS claim names the link's ``lineitem`` and grants the ``lineitem`` or
``lineitem.readonly`` scope: on every instructor's launch (the person who changes the
date in the LMS sees it taken at once), and on a learner's at most once every
:data:`LINEITEM_MAX_AGE` seconds per line item (``SET NX`` with an expiry in Redis: of
a class opening the link at once, one launch reads it, the others go straight on). A
read costs a token and a GET, each within :data:`LINEITEM_TIMEOUT` seconds; a failure
is logged and the launch goes on without it.

**Deep Linking.** The dates an instructor chose in the picker travel in the content
item's ``custom`` map (:data:`DEEP_LINK_KEYS`), so they come back with every launch of
the link, whatever the LMS did with the item's ``submission`` and ``available``. They
are taken only while the assignment has no dates yet (its first launch): after that,
the LMS's own dates and the instructor's in the tool supersede them.

``dates_source`` names the best source among the dates that changed (``lms:custom``,
``lms:lineitem``, ``lms:deeplink``).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from urllib.parse import urlsplit

from redis.exceptions import RedisError
from sqlalchemy.orm import Session

from lti import ags
from lti.launch import AGS_ENDPOINT, LTI, Launch
from lti.tokens import Platform, Tokens
from service import terms
from service.models import Assignment

log = logging.getLogger(__name__)

CUSTOM, LINEITEM, DEEPLINK = "lms:custom", "lms:lineitem", "lms:deeplink"
RANK = {CUSTOM: 0, LINEITEM: 1, DEEPLINK: 2}  # lower wins

# What the tool asks the platform to substitute (custom key -> variable).
CUSTOM_PARAMETERS = {
    "submission_start": "$ResourceLink.submission.startDateTime",
    "submission_end": "$ResourceLink.submission.endDateTime",
    "available_start": "$ResourceLink.available.startDateTime",
    "available_end": "$ResourceLink.available.endDateTime",
    "canvas_due_at": "$Canvas.assignment.dueAt.iso8601",
}
# The custom keys a Deep Linking item of ours carries its dates in.
DEEP_LINK_KEYS = {"opens_at": "jaxjudge_opens_at", "due_at": "jaxjudge_due_at",
                  "late_until": "jaxjudge_late_until"}
TOOL_PLATFORM = LTI + "tool_platform"
MAX_DATE_CHARS = 64
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(3000, 1, 1, tzinfo=UTC)
LINEITEM_MAX_AGE = 300  # seconds between a learner's launches that read the line item
LINEITEM_TIMEOUT = 5.0  # seconds, per request (the token's and the GET)
READ_PREFIX = "jaxjudge:lti:lineitem-read:"

Chosen = dict[str, tuple[datetime, str]]  # date name -> (value, source)


def parse(value: object) -> datetime | None:
    """An ISO 8601 date and time with a zone, in UTC; None for anything else (see the
    module): an unsubstituted variable, empty, too long, no zone, out of 1970-2999."""
    if not isinstance(value, str) or len(value) > MAX_DATE_CHARS:
        return None
    text = value.strip()
    if not text or text.startswith("$"):
        return None
    try:
        at = datetime.fromisoformat(text)
        if at.tzinfo is None or at.utcoffset() is None:
            return None
        at = at.astimezone(UTC)
    except (ValueError, OverflowError):
        return None
    return at if EARLIEST <= at < LATEST else None


def is_canvas(launch: Launch) -> bool:
    """Whether the launch comes from Canvas: its ``tool_platform`` claim says so, its
    issuer is Instructure's, or it substituted a ``$Canvas`` variable."""
    product = launch.claims.get(TOOL_PLATFORM)
    if isinstance(product, dict) and product.get("product_family_code") == "canvas":
        return True
    host = urlsplit(launch.platform.issuer).hostname or ""
    if host == "instructure.com" or host.endswith(".instructure.com"):
        return True
    return parse(launch.custom.get("canvas_due_at")) is not None


def per_student(launch: Launch) -> bool:
    """Whether the launch's substituted dates may be the launching student's own (a
    learner's launch from Canvas; see the module), not the assignment's."""
    return not launch.instructor and is_canvas(launch)


@dataclass(frozen=True)
class Offered:
    """The dates a launch itself carries in its custom claim."""

    submission_start: datetime | None = None
    available_start: datetime | None = None
    submission_end: datetime | None = None
    available_end: datetime | None = None
    canvas_due: datetime | None = None
    deep: Mapping[str, datetime] = field(default_factory=dict)  # the Deep Linking item's

    @property
    def due_given(self) -> bool:
        """Whether a due date came with the launch (then the line item is not read)."""
        return self.submission_end is not None or self.canvas_due is not None


def offered(launch: Launch) -> Offered:
    custom = launch.custom
    deep = {name: at for name, key in DEEP_LINK_KEYS.items()
            if (at := parse(custom.get(key))) is not None}
    if per_student(launch):
        return Offered(deep=deep)
    return Offered(
        submission_start=parse(custom.get("submission_start")),
        available_start=parse(custom.get("available_start")),
        submission_end=parse(custom.get("submission_end")),
        available_end=parse(custom.get("available_end")),
        canvas_due=parse(custom.get("canvas_due_at")) if launch.instructor else None,
        deep=deep)


def resolve(offer: Offered, lineitem_end: datetime | None = None, *, first: bool = False,
            has_due: bool = False) -> Chosen:
    """Each date from its best source (the table of the module). ``first``: the
    assignment has no dates yet (the Deep Linking item's count); ``has_due``: it has a
    due date (a ``late_until`` needs one)."""
    chosen: Chosen = {}

    def first_of(name: str, *options: tuple[datetime | None, str]) -> None:
        for at, source in options:
            if at is not None:
                chosen[name] = (at, source)
                return

    deep = offer.deep if first else {}
    first_of("opens_at", (offer.submission_start, CUSTOM), (offer.available_start, CUSTOM),
             (deep.get("opens_at"), DEEPLINK))
    first_of("due_at", (offer.submission_end, CUSTOM), (offer.canvas_due, CUSTOM),
             (lineitem_end, LINEITEM), (offer.available_end, CUSTOM),
             (deep.get("due_at"), DEEPLINK))
    due = chosen.get("due_at")
    end = offer.available_end
    if end is not None and due is not None and end > due[0]:
        chosen["late_until"] = (end, CUSTOM)
    else:
        first_of("late_until", (deep.get("late_until"), DEEPLINK))
    if "late_until" in chosen and "due_at" not in chosen and not has_due:
        del chosen["late_until"]
    # A date of a lower source that contradicts a higher one goes (due_at stays at a tie).
    while True:
        order = [n for n in terms.DATE_FIELDS if n in chosen]
        wrong = [(a, b) for a, b in zip(order, order[1:], strict=False)
                 if chosen[a][0] > chosen[b][0]]
        if not wrong:
            return chosen
        a, b = wrong[0]
        del chosen[max((a, b), key=lambda n: (RANK[chosen[n][1]], n != "due_at",
                                              n == "late_until"))]


def _changing(chosen: Chosen, last: Mapping[str, object]) -> list[str]:
    """The sources of the dates that differ from those the LMS sent last time (``last``:
    the assignment's ``lms_dates``, as :func:`service.terms.take_lms_dates` keeps them)."""
    return [source for name, (at, source) in chosen.items()
            if last.get(name, "unset") != at.isoformat()]


def source_of(chosen: Chosen, last: Mapping[str, object]) -> str:
    """The best source among the dates that changed, else among all."""
    changing = _changing(chosen, last)
    return min(changing or [source for _, source in chosen.values()], key=RANK.__getitem__)


def take(s: Session, assignment: Assignment, offer: Offered,
         lineitem_end: datetime | None, *, now: datetime) -> list[str]:
    """Take the dates of one launch (``offer``, and the line item's end if it was read)
    for ``assignment``; the LTI scores the change opened, to queue once committed.

    A launch whose dates all are those the LMS sent last time writes nothing more; one
    with a change first takes the assignment's row (:func:`service.terms.lock`) and
    reads it again, so two launches bringing the same new date change it (and re-send
    the grades it moves) once."""

    def chosen() -> Chosen:
        return resolve(offer, lineitem_end, first=assignment.dates_source is None,
                       has_due=assignment.due_at is not None)

    if not _changing(chosen(), assignment.lms_dates or {}):
        return []
    terms.lock(s, assignment.id)
    s.refresh(assignment)
    found = chosen()
    if not found:
        return []
    sent: dict[str, datetime | None] = {name: at for name, (at, _) in found.items()}
    return terms.take_lms_dates(s, assignment, sent,
                                source_of(found, assignment.lms_dates or {}), now=now)


# -- the line item


def _read_now(tokens: Tokens, launch: Launch, url: str) -> bool:
    """Whether this launch reads the line item (see the module): always for an
    instructor, for a learner when no launch read it in the last LINEITEM_MAX_AGE s."""
    if tokens.redis is None:
        return launch.instructor
    key = READ_PREFIX + hashlib.sha256(f"{launch.platform.id}\n{url}".encode()).hexdigest()[:32]
    try:
        if launch.instructor:
            tokens.redis.set(key, "1", ex=LINEITEM_MAX_AGE)
            return True
        return bool(tokens.redis.set(key, "1", nx=True, ex=LINEITEM_MAX_AGE))
    except RedisError as exc:
        log.warning("line item not read (Redis: %s)", exc)
        return False


def lineitem_end(launch: Launch, tokens: Tokens) -> datetime | None:
    """The ``endDateTime`` of the launch's line item, when this launch reads it (see the
    module) and it has a valid one; None otherwise. Never raises."""
    claim = launch.claims.get(AGS_ENDPOINT)
    if not isinstance(claim, dict):
        return None
    url, granted = claim.get("lineitem"), claim.get("scope")
    if not isinstance(url, str) or not url or len(url) > 2048:
        return None
    scope = ags.lineitem_scope([x for x in granted if isinstance(x, str)]
                               if isinstance(granted, list) else [])
    if scope is None or not _read_now(tokens, launch, url):
        return None
    settings = tokens.settings
    quick = settings.model_copy(update={
        "lti_timeout_seconds": min(settings.lti_timeout_seconds, LINEITEM_TIMEOUT)})
    platform = Platform(launch.platform.id, launch.platform.client_id,
                        launch.platform.token_url)
    try:
        item = ags.read_lineitem(Tokens(tokens.db, quick, tokens.redis), platform, url, scope)
    except ags.LineItemUnread as exc:
        log.warning("line item of platform %s not read at a launch: %s", platform.id, exc)
        return None
    except Exception:  # a launch never fails for the line item's sake
        log.exception("line item of platform %s not read at a launch", platform.id)
        return None
    return parse(item.get("endDateTime"))
