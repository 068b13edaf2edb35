"""Model providers: the offline demo model and OpenAI-compatible providers."""
