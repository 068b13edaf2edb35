"""Switchboard application: settings, app factory, auth, REST API, model providers, CLI."""
