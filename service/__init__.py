"""The parts of the grading service that the API and the workers share.

``service`` holds what both adapters need and neither owns: typed service settings, the
database (SQLAlchemy models, Alembic migrations, the submission state machine), the queue
(a Celery app that sends tasks *by name*), webhooks, batch archives and exports, and the
metrics both sides write and read. It imports neither ``api`` nor ``workers`` nor Flask
(checked by import-linter); grading itself stays in :func:`judge.grading.grade`.
"""
