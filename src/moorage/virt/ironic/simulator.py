"""Simulated Ironic: bare-metal node records, as the Ironic driver would read them.

There is no Ironic on this machine, so this stands in for its API, and says so:
every object here is a simulation. A node record has what the driver reads —
uuid, name, resource_class (``baremetal-gold``), traits (standard and
CUSTOM_*, as Ironic accepts them), properties (cpus, memory_mb, local_gb,
cpu_arch), provision_state, power_state, maintenance, conductor_group and the
instance it holds — and moves between provision states as Ironic's do when an
instance is deployed (available -> active) and torn down (active -> cleaning ->
available; the cleaning is instant here). It can be made unreachable
(``simulation.Reachability``).
"""

from __future__ import annotations

import copy
import json
import threading
import uuid as uuidlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from moorage.jsonvalue import JSONObject
from moorage.model import vocabulary
from moorage.virt.simulation import Reachability

AVAILABLE, ACTIVE = "available", "active"
# Ironic's provision states (ironic.common.states), the stable ones and the busy ones.
PROVISION_STATES = ("enroll", "verifying", "manageable", "inspecting", "inspect wait",
                    "inspect failed", AVAILABLE, "deploying", "wait call-back",
                    "deploy failed", ACTIVE, "deleting", "cleaning", "clean wait",
                    "clean failed", "rescue", "error")
POWER_ON, POWER_OFF = "power on", "power off"
SOFT_POWER_OFF, REBOOTING, SOFT_REBOOTING = "soft power off", "rebooting", "soft rebooting"
POWER_TARGETS = (POWER_ON, POWER_OFF, SOFT_POWER_OFF, REBOOTING, SOFT_REBOOTING)


class IronicConflict(Exception):
    """Ironic refuses the action in the node's state (its HTTP 409)."""


@dataclass
class SimulatedNode:
    """One bare-metal node record."""

    uuid: str
    name: str | None = None
    resource_class: str | None = None
    traits: frozenset[str] = frozenset()
    properties: JSONObject = field(default_factory=dict)
    provision_state: str = AVAILABLE
    power_state: str | None = POWER_OFF
    maintenance: bool = False
    maintenance_reason: str = ""
    conductor_group: str = ""
    instance_uuid: str | None = None
    instance_info: JSONObject = field(default_factory=dict)
    # How many times it was powered on.
    boots: int = 0

    def __post_init__(self) -> None:
        self.uuid = str(uuidlib.UUID(self.uuid))
        self.traits = frozenset(vocabulary.reportable(t) for t in self.traits)
        if self.provision_state not in PROVISION_STATES:
            raise ValueError(f"node {self.uuid}: provision_state {self.provision_state!r} "
                             f"is not one of Ironic's: {', '.join(PROVISION_STATES)}")


@dataclass
class IronicSimulator(Reachability):
    """A simulated Ironic API holding node records."""

    nodes: list[SimulatedNode] = field(default_factory=list)
    unreachable: str | None = None

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        seen: set[str] = set()
        for node in self.nodes:
            for key in (node.uuid, node.name):
                if key is not None and key in seen:
                    raise ValueError(f"two simulated Ironic nodes are called {key}")
                if key is not None:
                    seen.add(key)

    def _record(self, node_uuid: str) -> SimulatedNode:
        for node in self.nodes:
            if node.uuid == node_uuid:
                return node
        raise LookupError(f"Ironic has no node {node_uuid}")

    # -- what the driver reads --------------------------------------------------------
    def ping(self) -> None:
        """The API's root, as the driver checks on start."""
        self.answer()

    def list_nodes(self, conductor_group: str | None = None) -> list[SimulatedNode]:
        """Node records (copies), only of ``conductor_group`` unless it is None."""
        self.answer()
        with self._lock:
            return [copy.deepcopy(n) for n in self.nodes
                    if conductor_group is None or n.conductor_group == conductor_group]

    def get_node(self, node_uuid: str) -> SimulatedNode:
        self.answer()
        with self._lock:
            return copy.deepcopy(self._record(node_uuid))

    def node_by_instance(self, instance_uuid: str) -> SimulatedNode | None:
        self.answer()
        with self._lock:
            for node in self.nodes:
                if node.instance_uuid == instance_uuid:
                    return copy.deepcopy(node)
        return None

    # -- provisioning ------------------------------------------------------------------
    def deploy(self, node_uuid: str, instance_uuid: str, instance_info: JSONObject) -> None:
        """Deploy an instance: available -> active, powered on."""
        self.answer()
        with self._lock:
            node = self._record(node_uuid)
            if node.maintenance:
                raise IronicConflict(f"node {node_uuid} is in maintenance")
            if node.provision_state != AVAILABLE or node.instance_uuid is not None:
                raise IronicConflict(f"node {node_uuid} is {node.provision_state}, "
                                     f"not {AVAILABLE}")
            node.instance_uuid, node.instance_info = instance_uuid, dict(instance_info)
            node.provision_state, node.power_state = ACTIVE, POWER_ON
            node.boots += 1

    def undeploy(self, node_uuid: str) -> None:
        """Tear the instance down: active -> cleaning -> available, powered off."""
        self.answer()
        with self._lock:
            node = self._record(node_uuid)
            node.instance_uuid, node.instance_info = None, {}
            node.provision_state, node.power_state = AVAILABLE, POWER_OFF

    def set_power_state(self, node_uuid: str, target: str) -> None:
        """PUT /v1/nodes/{node}/states/power: ``target`` one of POWER_TARGETS; a
        reboot ends powered on."""
        self.answer()
        if target not in POWER_TARGETS:
            raise ValueError(f"power target {target!r} is not one of "
                             f"{', '.join(POWER_TARGETS)}")
        with self._lock:
            node = self._record(node_uuid)
            node.power_state = POWER_OFF if target in (POWER_OFF, SOFT_POWER_OFF) else POWER_ON
            node.boots += node.power_state == POWER_ON

    # -- what operators do ----------------------------------------------------------------
    def enroll(self, node: SimulatedNode) -> None:
        with self._lock:
            if any(n.uuid == node.uuid or (node.name and n.name == node.name)
                   for n in self.nodes):
                raise ValueError(f"Ironic already has a node {node.uuid} or {node.name}")
            self.nodes.append(node)

    def set_maintenance(self, node_uuid: str, on: bool, reason: str = "") -> None:
        with self._lock:
            node = self._record(node_uuid)
            node.maintenance, node.maintenance_reason = on, reason if on else ""

    def set_traits(self, node_uuid: str, names: Iterable[str]) -> None:
        checked = frozenset(vocabulary.reportable(t) for t in names)
        with self._lock:
            self._record(node_uuid).traits = checked

    def set_provision_state(self, node_uuid: str, state: str) -> None:
        if state not in PROVISION_STATES:
            raise ValueError(f"{state!r} is not one of Ironic's provision states")
        with self._lock:
            self._record(node_uuid).provision_state = state

    # -- describing one -------------------------------------------------------------------
    @classmethod
    def from_description(cls, description: Iterable[Mapping[str, Any]]) -> IronicSimulator:
        """A simulator from a JSON-like list of node records (``[ironic] simulation_file``)."""
        nodes = []
        for item in description:
            record = dict(item)
            record["traits"] = frozenset(record.get("traits", ()))
            nodes.append(SimulatedNode(**record))
        return cls(nodes)

    @classmethod
    def from_file(cls, path: str | Path) -> IronicSimulator:
        try:
            description = json.loads(Path(path).read_text())
            if not isinstance(description, list):
                raise ValueError("expected a JSON list of node records")
            return cls.from_description(description)
        except (OSError, TypeError, ValueError) as exc:
            raise ValueError(f"Ironic simulation {path}: {exc}") from None
