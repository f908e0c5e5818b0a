"""The Flask REST API: a thin adapter over ``judge.grading.grade`` (to come)."""
