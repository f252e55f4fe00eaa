"""Reading a heartbeat's answer, and applying it to the agent."""

from __future__ import annotations

import logging

import pytest

from moorage.compute.agent import ComputeAgent
from moorage.compute.registration import Heartbeat, InvalidAnswer, ServiceState, service_state
from moorage.conf import load_config
from moorage.model.flavor import Flavor
from moorage.model.image import Image
from moorage.placement.client import PlacementClient
from moorage.placement.launcher import free_port
from moorage.virt.driver import ComputeDriver, Guest
from moorage.virt.fake import FakeDriver, FakeHost
from moorage.virt.ironic.driver import IronicDriver
from moorage.virt.ironic.simulator import IronicSimulator, SimulatedNode
from moorage.virt.vmware.driver import VMwareDriver
from moorage.virt.vmware.simulator import VCenterSimulator


def test_an_answer_is_read() -> None:
    body = {"service": {"id": 3, "host": "h1", "disabled": True,
                        "disabled_reason": "maintenance", "forced_down": False},
            "destroy": ["u1", "u2"]}
    assert service_state(body) == ServiceState(True, "maintenance", False, ("u1", "u2"))


def test_destroy_may_be_left_out() -> None:
    assert service_state({"service": {"disabled": False}}).destroy == ()


@pytest.mark.parametrize(("body", "message"), [
    ([], "not {"),
    ({"service": {}}, "service.disabled is None, not a boolean"),
    ({"service": {"disabled": "no"}}, "service.disabled is 'no'"),
    ({"service": {"disabled": False}, "destroy": "u1"}, "destroy is 'u1', not a list"),
])
def test_a_bad_answer_is_named(body: object, message: str) -> None:
    with pytest.raises(InvalidAnswer, match=message.replace("{", r"\{")):
        service_state(body)


class FailingOnce(FakeDriver):
    """A fake driver whose first destroy fails, as a hypervisor hiccup would."""

    failed = False

    def destroy(self, instance_uuid: str) -> None:
        if not self.failed:
            self.failed = True
            raise RuntimeError("hypervisor hiccup")
        super().destroy(instance_uuid)


def test_a_destroy_that_failed_is_retried_at_the_next_beat() -> None:
    conf = load_config([], [("DEFAULT", "host", "h1")])
    driver = FailingOnce(conf, FakeHost(nodes=("h1",)))
    agent = ComputeAgent(conf, driver, PlacementClient(f"http://127.0.0.1:{free_port()}"))
    uuid = "0b5d2c1a-9e8f-4a3b-8c7d-6e5f4a3b2c1d"
    driver.spawn(Guest(uuid, "vm", "h1", Flavor("f", 1, 512), Image.create("i", "i", "raw")))
    heartbeat = Heartbeat(agent, "http://127.0.0.1:1", "http://127.0.0.1:2", token=None,
                          interval=1, timeout=1)
    assert heartbeat.apply(ServiceState(False, destroy=(uuid,))) == []
    assert driver.guests() == [uuid]
    # The API does not list it again (its migration is completed); the agent remembers.
    assert heartbeat.apply(ServiceState(False)) == [uuid]
    assert driver.guests() == []


def _heartbeat(driver: ComputeDriver) -> Heartbeat:
    agent = ComputeAgent(driver.conf, driver,
                         PlacementClient(f"http://127.0.0.1:{free_port()}"))
    return Heartbeat(agent, "http://127.0.0.1:1", "http://127.0.0.1:8781", token=None,
                     interval=1, timeout=1)


def test_a_report_says_what_each_driver_runs() -> None:
    conf = load_config([], [("DEFAULT", "host", "h1")])
    fake = _heartbeat(FakeDriver(conf, FakeHost(nodes=("h1", "h1b")))).report()
    assert {k: fake[k] for k in ("binary", "driver", "nodes", "agent_url",
                                 "supported_instances", "hypervisor_version")} == {
        "binary": "nova-compute", "driver": "fake", "nodes": ["h1", "h1b"],
        "agent_url": "http://127.0.0.1:8781",
        "supported_instances": [["x86_64", "fake", "hvm"]], "hypervisor_version": 1000}
    vmware = _heartbeat(VMwareDriver(conf)).report()
    assert vmware["supported_instances"] == [["x86_64", "vmware", "hvm"],
                                             ["i686", "vmware", "hvm"]]
    assert vmware["hypervisor_version"] is None
    nodes = [SimulatedNode(f"1b4e28ba-2fa1-11d2-883f-0016d3cca42{i}", resource_class="gold",
                           properties={"cpu_arch": arch} if arch else {})
             for i, arch in enumerate(("x86_64", "aarch64", "x86_64", None))]
    ironic = _heartbeat(IronicDriver(conf, IronicSimulator(nodes=nodes))).report()
    assert ironic["supported_instances"] == [["aarch64", "baremetal", "hvm"],
                                             ["x86_64", "baremetal", "hvm"]]
    assert ironic["hypervisor_version"] == 1


def test_an_unreachable_hypervisor_reports_what_it_said_last() -> None:
    conf = load_config([], [("DEFAULT", "host", "h1")])
    simulator = VCenterSimulator()
    heartbeat = _heartbeat(VMwareDriver(conf, simulator))
    before = heartbeat.report()
    simulator.make_unreachable("network down")
    assert heartbeat.report() == before


def test_the_first_beat_learns_an_enabled_state_quietly(caplog: pytest.LogCaptureFixture
                                                        ) -> None:
    """An agent started with a compute API learns its disabled state from the first
    beat's answer: "enabled" is said at DEBUG (a fleet of 50,000 hosts hears it at
    once), "disabled" and every change after it at INFO."""
    conf = load_config([], [("DEFAULT", "host", "h1")])

    def agent() -> Heartbeat:
        return Heartbeat(ComputeAgent(conf, FakeDriver(conf, FakeHost(nodes=("h1",))),
                                      PlacementClient(f"http://127.0.0.1:{free_port()}"),
                                      disabled=None),
                         "http://127.0.0.1:1", "http://127.0.0.1:2", token=None,
                         interval=1, timeout=1)

    def lines() -> list[tuple[int, str]]:
        found = [(r.levelno, r.getMessage()) for r in caplog.records
                 if r.name == "moorage.compute.registration"]
        caplog.clear()
        return found

    caplog.set_level(logging.DEBUG, logger="moorage.compute.registration")
    enabled = agent()
    enabled.apply(ServiceState(False))
    assert lines() == [(logging.DEBUG, "service h1 enabled by the operator")]
    assert enabled.agent.disabled is False
    enabled.apply(ServiceState(True, "maintenance"))
    assert lines() == [(logging.INFO, "service h1 disabled by the operator (maintenance)")]
    agent().apply(ServiceState(True))
    assert lines() == [(logging.INFO, "service h1 disabled by the operator")]
