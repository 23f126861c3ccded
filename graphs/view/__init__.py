"""`bongard view`: a local, read-only web viewer of the results store.

Server-rendered pages (Starlette, Jinja2 templates with autoescaping, uvicorn) bound to
127.0.0.1, reading the store through a read-only SQLite connection. The web stack is the
optional `view` extra: nothing here is imported until `bongard view` runs.
"""
