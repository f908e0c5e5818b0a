"""LTI 1.3 Advantage, the tool side: launches (OIDC login, id_token checks, the
platforms' key sets), the tool's keys, platform registration (by hand and dynamic), Deep
Linking, grades (AGS), the roster (NRPS) and an assignment's dates as the LMS sends them
(:mod:`lti.dates`). Every module but :mod:`lti.views` and
:mod:`lti.cli` is free of Flask, so workers can send scores with them; :mod:`lti.views`
is the blueprint of the LTI endpoints with its templates (``lti/templates/lti/``), a
sibling of the REST API and the pages that imports neither."""
