"""The conductor: carries out server operations the compute API has accepted.

    manager.py     Conductor: the worker pool, leases, polling, takeovers
    leases.py      what a conductor may trust of its leases without asking
    tasks/         one task per operation (build, delete, rebuild, moves, their ends)
    faults.py      what a server in ERROR says, and its attempt history (pure)
    specs.py       ServerRecord -> RequestSpec; the scheduling record (pure)
"""
