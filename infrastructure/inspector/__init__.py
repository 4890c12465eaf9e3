"""The read-only session inspector in the browser (issue 41, ADR 0075).

``ctxc serve`` mounts it at ``/ui``; ``ctxc inspect`` serves it alone on 127.0.0.1.
Server-side HTML from Jinja2 templates with autoescape on: every piece of message
content is escaped; the pages run no script and load nothing from another origin.
"""

from .routes import mount

__all__ = ["mount"]
