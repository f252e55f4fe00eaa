"""The garbage collector of a long-running Moorage process.

A service builds a large, long-lived heap at start (placement's index, the compute
API's host catalogue, a fleet's thousands of simulated hosts) and then allocates
many short-lived objects per request. CPython's full collections walk the whole
heap, long-lived part included: measured with ``perf`` during `moorage run
--example large`, the collector took 5 to 9% of the compute API's and the run's CPU.
"""

from __future__ import annotations

import gc

# Net allocations of tracked objects between two collections of the youngest
# generation (CPython's default: 700). A request of the compute API makes a few
# thousand (placement's answer decoded, the candidates weighed, the server's record)
# and frees nearly all of them before it ends; at 700 the collector ran about twice
# per boot while they were alive, walking them and moving them to older
# generations, about 240 µs of CPU each time. Measured with bench/e2e.py (1,000
# hosts, 2 API processes, 3,000 boots, the collections' thread CPU summed): the two
# API workers' collections took 1.6 s over the run at 700 and 0.6 s at 10,000, most
# of that before start-up ended, and the API's CPU per boot fell from 7.26 to 6.87 ms.
YOUNG_THRESHOLD = 10_000


def settle() -> None:
    """Collect once, then move every object alive now out of the collector's reach
    (``gc.freeze``): what start-up built is never walked again. Objects created
    later are collected as usual, the youngest generation once per
    ``YOUNG_THRESHOLD`` net allocations. Call it once the process has built its
    long-lived state, and before a server forks its workers (the frozen pages then
    stay shared).
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, *gc.get_threshold()[1:])
