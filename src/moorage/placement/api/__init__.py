"""HTTP handlers of the placement API, one module per noun.

Each handler parses and validates, calls the data layer (storage/) or the index
(engine/), and shapes the response for the requested microversion.
"""
