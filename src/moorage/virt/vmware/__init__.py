"""The VMware driver (``driver.py``) and the simulated vCenter it runs on here
(``simulator.py``): there is no vCenter on this machine."""
