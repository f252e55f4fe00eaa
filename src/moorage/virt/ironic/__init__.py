"""The Ironic driver (``driver.py``) and the simulated Ironic node records it runs on
here (``simulator.py``): there is no Ironic on this machine."""
