"""The instructor pages, one blueprint ``instructor`` (:mod:`web.instructor.blueprint`)
whose routes live in a module per job:

- :mod:`~web.instructor.courses`: the tenant's courses, a course's assignments, an
  assignment's gradebook (the roster read again from the LMS when stale), one student's
  submissions, rejudging, grades to the LMS, and the exports (CSV, Gradescope);
- :mod:`~web.instructor.batches`: class uploads (a zip of ``<student_id>.py`` files)
  and their progress;
- :mod:`~web.instructor.term`: an assignment's course term (dates, late policy,
  attempts, hidden results), extensions, and grades set by hand with their audit;
- :mod:`~web.instructor.insight`: an assignment's and a problem's analytics (charts
  with their tables, the CSV) and similarity across the class (pairs, clusters, two
  submissions side by side);
- :mod:`~web.instructor.problemsets`: the tenant's own problem sets (signed in with a
  key): a new set, uploading a package version, its build, making it live.
"""

from web.instructor import batches, courses, insight, problemsets, term
from web.instructor.blueprint import bp

__all__ = ["batches", "bp", "courses", "insight", "problemsets", "term"]
