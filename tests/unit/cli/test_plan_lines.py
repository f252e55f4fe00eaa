"""A dry run's plan as the CLI prints it: where it goes, and when it may differ."""

from __future__ import annotations

from moorage.cli.server import plan_lines


def test_a_plan_that_may_differ_says_why_and_where() -> None:
    plan = {"operation": "build", "schedulable": True, "host": "e1", "alternates": ["e2"],
            "may_differ": [{"source": "[filter_scheduler] host_subset_size",
                            "detail": "the boot chooses at random among the best hosts",
                            "hosts": ["e1", "e2"]},
                           {"source": "[placement] randomize_allocation_candidates",
                            "detail": "placement returns its allocation candidates in a "
                                      "random order"}]}
    lines = plan_lines(plan)
    assert lines[:4] == [
        "build would go to e1", "alternates: e2",
        "may differ: [filter_scheduler] host_subset_size: the boot chooses at random among "
        "the best hosts (the boot may choose e1, e2)",
        "may differ: [placement] randomize_allocation_candidates: placement returns its "
        "allocation candidates in a random order"]


def test_a_certain_plan_says_nothing_of_differences() -> None:
    lines = plan_lines({"operation": "build", "schedulable": True, "host": "e1",
                        "may_differ": []})
    assert not [line for line in lines if line.startswith("may differ")]


def test_a_plan_names_the_hosts_that_will_refuse() -> None:
    plan = {"operation": "build", "schedulable": True, "host": "pc1", "alternates": ["q1"],
            "refusals": [{"position": 0, "host": "pc1",
                          "traits": ["COMPUTE_NET_VIF_MODEL_IGB (hw_vif_model=igb)"],
                          "detail": "the host reports them unsupported"}]}
    assert plan_lines(plan)[2] == (
        "will refuse: the chosen host (pc1): COMPUTE_NET_VIF_MODEL_IGB (hw_vif_model=igb): "
        "the host reports them unsupported")
    hidden = {**plan, "host": None, "refusals": [
        {k: v for k, v in plan["refusals"][0].items() if k != "host"}]}
    assert plan_lines(hidden)[2].startswith("will refuse: the chosen host: ")
