"""The compute agent: one per host, it keeps the host's provider tree in placement
(inventories, and traits from its driver's capability discovery) and builds guests."""
