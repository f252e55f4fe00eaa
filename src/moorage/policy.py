"""oslo.policy with its decisions remembered: the one enforcer the HTTP services share.

oslo.policy costs about 150 us per check (it looks for the policy file, re-reads its
configuration and introspects every check function): a tenth of a placement claim,
and an eighth of the compute API's CPU under a burst of boots. A decision depends
only on the rule, the credentials and the target, so it is remembered, and forgotten
when a policy file changes (looked at once a second: an edited policy file takes
effect within a second, without a restart).
"""

from __future__ import annotations

import contextlib
import glob
import os
import threading
import time
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Protocol

from oslo_config import cfg
from oslo_policy import policy as oslo_policy

# What a target or the credentials say: ids and names (None: not known), flags such as
# is_admin, and the roles.
PolicyValue = str | bool | None | Sequence[str]


class PolicyCaller(Protocol):
    """Who asks: a frozen value (the services' contexts and credentials are frozen
    dataclasses) whose policy values are a function of it alone, so that a decision
    is remembered under the caller itself."""

    def __hash__(self) -> int: ...

    def policy_values(self) -> dict[str, PolicyValue]: ...


def _frozen(values: Mapping[str, PolicyValue]) -> Hashable:
    """``values`` as part of a dict key: its items in their order (the same target
    built in another order is another key with the same answer), lists as tuples."""
    return tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in values.items())


class CachedEnforcer:
    """An oslo.policy Enforcer for ``rules``, answering each question once."""

    MAX_DECISIONS = 10_000
    RECHECK_SECONDS = 1.0

    def __init__(self, conf: cfg.ConfigOpts, rules: Iterable[oslo_policy.RuleDefault]) -> None:
        self._conf = conf
        self.enforcer = oslo_policy.Enforcer(conf)
        self.enforcer.suppress_default_change_warnings = True
        self.enforcer.suppress_deprecation_warnings = True
        self.enforcer.register_defaults(list(rules))
        self.enforcer.load_rules()
        self._decisions: dict[Hashable, bool] = {}
        self._files = self._policy_files()
        self._checked_at = time.monotonic()
        self._lock = threading.Lock()

    def _policy_files(self) -> tuple[tuple[str, int], ...]:
        """(path, mtime) of every policy file the enforcer reads."""
        found: list[str] = []
        path = getattr(self.enforcer, "policy_path", None)
        if path:
            found.append(path)
        for directory in self._conf.oslo_policy.policy_dirs:
            with contextlib.suppress(cfg.ConfigFilesNotFoundError):
                resolved = self._conf.find_file(directory)
                if resolved and os.path.isdir(resolved):
                    found.extend(sorted(glob.glob(os.path.join(resolved, "*"))))
        stamps = []
        for name in found:
            with contextlib.suppress(OSError):
                stamps.append((name, os.stat(name).st_mtime_ns))
        return tuple(stamps)

    def _forget_if_changed(self) -> None:
        now = time.monotonic()
        if now - self._checked_at < self.RECHECK_SECONDS:
            return
        self._checked_at = now
        self.enforcer.load_rules()
        files = self._policy_files()
        if files != self._files:
            self._files = files
            self._decisions.clear()

    def allows(self, rule: str, target: Mapping[str, PolicyValue],
               caller: PolicyCaller) -> bool:
        """May ``caller`` do ``rule`` on ``target``? (A rule whose scope the caller's
        credentials lack is a no.) Remembered under the caller itself: its policy
        values are read only for a new question (freezing them on every check cost
        a sixth of a server list's CPU, three checks per server)."""
        key = (rule, caller, _frozen(target))
        with self._lock:
            self._forget_if_changed()
            allowed = self._decisions.get(key)
        if allowed is None:
            try:
                allowed = bool(self.enforcer.authorize(rule, dict(target),
                                                       caller.policy_values()))
            except oslo_policy.InvalidScope:
                allowed = False
            with self._lock:
                if len(self._decisions) >= self.MAX_DECISIONS:
                    self._decisions.clear()
                self._decisions[key] = allowed
        return allowed
