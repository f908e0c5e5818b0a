"""The parts of the grading service that the HTTP siblings (``api``, ``web``, ``lti``)
and the workers share.

``service`` holds what they all need and none owns: typed service settings, the
database (SQLAlchemy models, Alembic migrations, the submission state machine), the
lease every kind of job is held under (:mod:`service.leases`), the queue (a Celery app
that sends tasks *by name*), the outbox of webhooks and grades, the one outgoing HTTP
client (:mod:`service.outbound`), problem sets and their builds, batch archives and
exports, long-poll notices, and the metrics both sides write and read. It imports no
sibling, no worker, no application and no web framework (import-linter's layers);
grading itself stays in :func:`judge.grading.grade`.
"""
