"""The compute agent: one per host, it keeps the host's provider tree in placement
(inventories, and traits from its driver's capability discovery) and builds guests."""

# The binary the agent's service is registered as: nova's name for its compute service,
# which clients name it by (novaclient before compute API 2.53 disables and enables
# "nova-compute" on a host; Tempest lists services by it).
BINARY = "nova-compute"
