"""The scheduler: request spec, request filters (image properties become required
traits), host filters, weighers, and select_destinations with its claim."""
