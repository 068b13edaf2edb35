"""WebSocket layer: wire protocol, stream translation, fan-out hub, turn runner, endpoint."""
