"""RAP remote tools: connectors whose tools run in another process, reached over HTTP.

A tool server (any language) publishes a toolset; when the model calls one of its tools
the server gets an invocation and later POSTs a ``tool_result`` to ``/rap/callback``.
See docs/rap.md. Kept import-light: ``app.settings`` imports ``connectors.rap.config``.
"""
