"""The pages: a student page per assignment and the instructor pages, server-rendered,
a blueprint beside the REST API over the same service layer (never calling the API over
HTTP). Page sessions live in Redis and travel in the URL (:mod:`web.session`)."""
