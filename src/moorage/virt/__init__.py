"""Virt drivers: each reports what its hypervisor can do as standard traits, and runs
guests. ``driver.py`` is the interface; ``libvirt/``, ``fake.py``, ``vmware/`` and
``ironic/`` implement it."""
