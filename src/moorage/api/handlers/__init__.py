"""Compute API handlers, one module per noun: parse and validate, call the data layer,
shape the response."""
