"""The in-memory read side of placement: the provider index and the
allocation-candidates engine that queries it."""
