"""What the tests share besides fixtures, one module per kind of thing.

``conftest.py`` files hold only fixtures and hooks; a test module imports helpers from
here (``from tests.support.clients import open_client``), never from a ``conftest``:

- ``waiting``: ``wait_until`` a condition, ``wait_started`` for in-process servers;
- ``servers``: uvicorn on a loopback port in the test's loop (``running_uvicorn``, the one
  way every test server starts) and the real app on it (``serve``, ``LiveServer``);
- ``processes``: ``switchboard serve`` in its own process (``ServerProcess``);
- ``clients``: the socket client (``open_client``, ``Client``), the OpenAI client;
- ``proxies``: a loopback proxy that drops every connection on demand;
- ``logs``: capturing what a server logs; ``chat_log``: what a stored chat log must be;
- ``db``: the test databases (PostgreSQL's URL, emptying tables, dropping schemas);
- ``connectors``, ``models``, ``rap``, ``browser``: the helpers of those test areas.

The fake outside services live in ``tests/fakes/``.
"""
