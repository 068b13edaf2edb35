"""An Open Responses server (docs/open-responses.md): ``POST /v1/responses`` runs Switchboard's agents.

``request`` (bodies, validation) → ``agents`` (instructions, tool_choice) → ``service``
(the turn, the chat behind ``previous_response_id``) → ``stream`` (SDK events → the
spec's events and Response objects) → ``routes``. See docs/open-responses.md.
"""
