"""The Placement service: providers, inventories, traits, aggregates, allocations and
allocation candidates over the OpenStack Placement API (microversions 1.0 to 1.39)."""
