"""Quotas: nova's per-project (and per-user) limits, enforced where the counted thing
is recorded.

``resources`` names the resources, their [quota] defaults and which a microversion
shows; ``engine`` resolves a project's limits, counts its usage (registered counters:
servers, key pairs, and what other parts register, server groups) and checks a
request against them, in the caller's transaction; the refusals carry nova's words.
"""
