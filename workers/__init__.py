"""Celery workers: thin adapters that load a submission, call
:func:`judge.grading.grade`, and store the report. Start one with

    celery -A workers.app worker -Q interactive,batch --concurrency 1

and the webhook deliverer with

    celery -A workers.app worker -Q webhooks --pool threads --concurrency 8 --without-sweeper
"""
