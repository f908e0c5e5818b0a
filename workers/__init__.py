"""Celery workers: thin adapters over ``judge.grading.grade`` (to come)."""
