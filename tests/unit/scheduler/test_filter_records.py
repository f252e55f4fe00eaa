"""Filter records as data: their JSON both ways, the strings older rows hold, and the
text people read, rendered last."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from moorage.scheduler.explain import trait_origins
from moorage.scheduler.filter_records import (
    Addition,
    Constraint,
    CorruptFilterRecord,
    FilterRecord,
    Origin,
    OriginKind,
    records_from_json,
    records_json,
)
from moorage.scheduler.request_filters import FilterContext, process_request_spec
from tests.unit.scheduler.fakes import FakeCatalog, conf, spec

E1000 = Origin(OriginKind.IMAGE_PROPERTY, "hw_vif_model", "e1000")
STATUS = Origin(OriginKind.REQUEST_FILTER, "compute_status_filter")
VIF = Addition(Constraint.ROOT_REQUIRED, ("COMPUTE_NET_VIF_MODEL_E1000",), E1000,
               "the host must offer what the image asks for")
DISABLED = Addition(Constraint.ROOT_FORBIDDEN, ("COMPUTE_STATUS_DISABLED",), STATUS,
                    "no disabled host")
RACKS = Addition(Constraint.MEMBER_OF, ("a1", "a2"),
                 Origin(OriginKind.AGGREGATE_METADATA, "availability_zone", "az1"),
                 "the requested availability zone")


def test_json_form() -> None:
    record = FilterRecord("transform_image_metadata", True, (VIF,), ("a note",))
    assert record.to_json() == {
        "name": "transform_image_metadata", "ran": True, "notes": ["a note"],
        "added": [{"constraint": "root_required", "names": ["COMPUTE_NET_VIF_MODEL_E1000"],
                   "origin": {"kind": "image_property", "name": "hw_vif_model",
                              "value": "e1000"},
                   "why": "the host must offer what the image asks for"}]}
    assert DISABLED.to_json()["origin"] == {"kind": "request_filter",
                                            "name": "compute_status_filter"}


names = st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789", min_size=1, max_size=12)
origins = st.builds(Origin, st.sampled_from(OriginKind), names, st.none() | st.text(max_size=8))
additions = st.builds(Addition, st.sampled_from(Constraint),
                      st.lists(names, min_size=1, max_size=3).map(tuple), origins,
                      st.text(max_size=20))
records = st.builds(FilterRecord, names, st.booleans(),
                    st.lists(additions, max_size=3).map(tuple),
                    st.lists(st.text(max_size=10), max_size=2).map(tuple))


@given(records)
def test_round_trip(record: FilterRecord) -> None:
    assert FilterRecord.from_json(record.to_json()) == record
    assert records_from_json([record.to_json()]) == (record,)


def test_records_read_back_are_shared_and_their_json_made_once() -> None:
    stored = records_json([FilterRecord("transform_image_metadata", True, (VIF,)),
                           FilterRecord("compute_status_filter", True, (DISABLED,))])
    first, again = records_from_json(stored), records_from_json(json.loads(json.dumps(stored)))
    assert first == again and all(a is b for a, b in zip(first, again, strict=True))
    shown = first[0].to_json()
    shown["name"] = "changed by its reader"
    assert first[0].to_json() == stored[0]
    assert first[0].to_json()["added"] is shown["added"]  # made once
    with pytest.raises(CorruptFilterRecord, match="'broken'"):
        records_from_json([{"name": "broken", "added": "not a list"}])


# The strings FilterRecord.added held before it was typed, as server rows keep them.
OLD_FORMS: list[tuple[str, str, Addition]] = [
    ("transform_image_metadata", "root_required:COMPUTE_NET_VIF_MODEL_E1000 (hw_vif_model=e1000)",
     Addition(Constraint.ROOT_REQUIRED, ("COMPUTE_NET_VIF_MODEL_E1000",), E1000)),
    ("require_image_type_support", "root_required:COMPUTE_IMAGE_TYPE_VMDK",
     Addition(Constraint.ROOT_REQUIRED, ("COMPUTE_IMAGE_TYPE_VMDK",),
              Origin(OriginKind.REQUEST_FILTER, "require_image_type_support"))),
    ("compute_status_filter", "root_forbidden:COMPUTE_STATUS_DISABLED",
     Addition(Constraint.ROOT_FORBIDDEN, ("COMPUTE_STATUS_DISABLED",), STATUS)),
    ("require_tenant_aggregate", "member_of:in:a1,a2",
     Addition(Constraint.MEMBER_OF, ("a1", "a2"),
              Origin(OriginKind.REQUEST_FILTER, "require_tenant_aggregate"))),
    ("isolate_aggregates", "forbidden_aggregates:gpu",
     Addition(Constraint.FORBIDDEN_AGGREGATES, ("gpu",),
              Origin(OriginKind.REQUEST_FILTER, "isolate_aggregates"))),
]


@pytest.mark.parametrize(("name", "text", "addition"), OLD_FORMS)
def test_old_string_form_is_read(name: str, text: str, addition: Addition) -> None:
    record = FilterRecord.from_json({"name": name, "ran": True, "added": [text], "notes": []})
    assert record.added == (addition,)
    # and written back in today's form, which reads the same
    assert FilterRecord.from_json(record.to_json()) == record


@pytest.mark.parametrize("data", [
    {"name": "x", "ran": True, "added": ["COMPUTE_NET_VIF_MODEL_E1000"]},
    {"name": "x", "ran": True, "added": ["required:X"]},
    {"name": "x", "ran": True, "added": ["member_of:a,b"]},
    {"name": "x", "ran": True, "added": [{"constraint": "root_required"}]},
    {"name": "x", "ran": True, "added": [{"constraint": "nope", "names": ["X"],
                                          "origin": {"kind": "request_filter", "name": "x"}}]},
    {"name": "x", "ran": True, "added": [7]},
    {"ran": True, "added": []},
])
def test_corrupt_records_say_which(data: dict[str, Any]) -> None:
    with pytest.raises(CorruptFilterRecord, match="request filter record"):
        FilterRecord.from_json(data)


@pytest.mark.parametrize(("addition", "source", "text"), [
    (VIF, "image property hw_vif_model=e1000",
     "required host trait COMPUTE_NET_VIF_MODEL_E1000 (image property hw_vif_model=e1000)"),
    (DISABLED, "request filter compute_status_filter: no disabled host",
     "forbidden host trait COMPUTE_STATUS_DISABLED (no disabled host)"),
    (RACKS, "aggregate metadata availability_zone=az1",
     "in one of aggregates a1, a2 (aggregate metadata availability_zone=az1)"),
    (OLD_FORMS[1][2], "request filter require_image_type_support",
     "required host trait COMPUTE_IMAGE_TYPE_VMDK"),
])
def test_text_is_rendered_from_the_fields(addition: Addition, source: str, text: str) -> None:
    assert addition.source() == source
    assert addition.describe() == text


def test_records_json_and_trait_origins_read_the_records() -> None:
    s = spec(properties={"hw_vif_model": "e1000"}, disk_format="vmdk")
    process_request_spec(s, FilterContext(conf(
        scheduler__image_metadata_prefilter=True,
        scheduler__query_placement_for_image_type_support=True), FakeCatalog()))
    assert [FilterRecord.from_json(r) for r in records_json(s.filter_records)] == \
        s.filter_records
    origins = trait_origins(s)
    assert origins["COMPUTE_NET_VIF_MODEL_E1000"] == ["image property hw_vif_model=e1000"]
    assert origins["COMPUTE_IMAGE_TYPE_VMDK"] == ["image disk_format=vmdk"]
    assert origins["COMPUTE_STATUS_DISABLED"] == [
        "request filter compute_status_filter: no disabled host"]
    # a spec whose filters have not run names no filter's trait
    assert trait_origins(spec(properties={"hw_vif_model": "e1000"})) == {}
