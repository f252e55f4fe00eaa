"""The domain's values shared by the services: inventories, flavors, images."""
