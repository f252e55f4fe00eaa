"""The compute API: flavors, images, servers, services, hypervisors and aggregates in
nova's REST shapes, with its own database, and the internal route agents heart-beat to."""
