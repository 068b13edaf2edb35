"""AG-UI: ``POST /ag-ui`` runs the agents for any AG-UI client (docs/ag-ui.md).

``request`` reads a ``RunAgentInput`` into what to run, ``events`` turns a turn's SDK events
and outcome into AG-UI events (pure), ``service`` runs the turn in the turn manager, and
``routes`` is the HTTP endpoint.
"""
