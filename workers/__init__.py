"""Celery workers: thin adapters that load a submission, call
:func:`judge.grading.grade`, and store the report. Start a grading worker with

    celery -A workers.app worker -Q interactive,batch --concurrency 1

the webhook deliverer with

    celery -A workers.app worker -Q webhooks --pool threads --concurrency 8

and the sweeper (one or more; one sweeps at a time) with

    python -m workers.sweeper
"""
