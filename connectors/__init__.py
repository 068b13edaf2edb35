"""Connectors: the ToolResponse family, adapters, the registry and one agent per service."""
