"""The request body schemas: valid JSON Schema, the same in /openapi.json as in the
validators dispatch runs (the document cannot drift from behaviour), and messages that
name the field and what is allowed."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from moorage.api.errors import BadRequest
from moorage.api.openapi import build_document
from moorage.api.routes import ROUTES
from moorage.api.schemas import QUERY_PARAMETERS, REQUEST_SCHEMAS
from moorage.api.validation import VALIDATORS, validate

WRITES = ("post", "put", "patch")


def _operations() -> list[tuple[str, str, dict[str, Any]]]:
    document = build_document(ROUTES)
    return [(path, method, operation) for path, operations in document["paths"].items()
            for method, operation in operations.items()]


@pytest.mark.parametrize("name", sorted(REQUEST_SCHEMAS))
def test_every_schema_is_valid_json_schema_2020_12(name: str) -> None:
    jsonschema.Draft202012Validator.check_schema(REQUEST_SCHEMAS[name])


def test_document_and_validators_name_the_same_bodies() -> None:
    documented = {}
    for path, method, operation in _operations():
        if method in WRITES:
            assert "requestBody" in operation, f"{method.upper()} {path} has no body schema"
        if "requestBody" in operation:
            schema = operation["requestBody"]["content"]["application/json"]["schema"]
            documented[operation["operationId"]] = schema
    assert set(documented) == set(VALIDATORS)
    for name, schema in documented.items():
        # The very schema the validator was made from, not a copy that could differ.
        assert schema is VALIDATORS[name].schema, name


def test_operation_ids_are_unique() -> None:
    ids = [operation["operationId"] for _, _, operation in _operations()]
    assert len(ids) == len(set(ids))


def test_document_is_openapi_3_1() -> None:
    assert build_document(ROUTES)["openapi"] == "3.1.0"


def _message(name: str, body: Any) -> str:
    with pytest.raises(BadRequest) as raised:
        validate(VALIDATORS[name], body)
    return raised.value.message


FLAVOR = {"name": "m1", "ram": 512, "vcpus": 1, "disk": 1}
SERVER = {"name": "vm", "flavorRef": "m1", "imageRef": "cirros", "networks": "none"}


@pytest.mark.parametrize(("name", "body", "words"), [
    ("create_flavor", {"flavor": {**FLAVOR, "ram": 0}},
     ["field 'ram' at flavor.ram", "0 is not valid", "from 1 to 2147483647"]),
    ("create_flavor", {"flavor": {**FLAVOR, "vcpus": "٣"}}, ["'vcpus'", "ASCII digits"]),
    ("create_flavor", {"flavor": {**FLAVOR, "colour": "red"}},
     ["'colour' was unexpected", "allowed: OS-FLV-EXT-DATA:ephemeral, description"]),
    ("create_flavor", {"flavor": {"name": "m1"}}, ["'ram' is a required property (in flavor)"]),
    ("create_flavor", [], ["Invalid request body: must be an object, not []"]),
    ("create_image", {"name": "i", "disk_format": "qcow3"},
     ["'disk_format'", "allowed: ami, ari", "qcow2"]),
    ("create_image", {"name": None}, ["'name'", "must be a string, not None"]),
    ("update_service", {"state": "up"}, ["'state' was unexpected",
                                         "allowed: binary, disabled_reason, forced_down, "
                                         "host, status"]),
    ("update_service", {"status": "off"}, ["allowed: enabled, disabled"]),
    ("server_action", {"shelve": {}}, ["There is no such action: shelve",
                                       "confirmResize, evacuate, forceDelete, lock, migrate"]),
    ("server_action", {"reboot": {}}, ["'type' is a required property (in reboot)"]),
    ("server_action", {"reboot": {"type": "WARM"}}, ["'WARM' is not valid",
                                                     "HARD, SOFT"]),
    ("server_action", {"migrate": None, "evacuate": None}, ["exactly one action", "2 given"]),
    ("create_server", {"server": {**SERVER, "block_device_mapping_v2": [
        {"boot_index": 0, "source_type": "image", "destination_type": "volume",
         "uuid": "x", "volume_size": 0}]}},
     ["'volume_size' at server.block_device_mapping_v2[0].volume_size", "at least 1"]),
    ("create_server", {"server": {**SERVER, "block_device_mapping_v2": [
        {"boot_index": 0, "source_type": "image", "destination_type": "volume",
         "uuid": "x", "volume_size": "1G"}]}},
     ["'volume_size' at server.block_device_mapping_v2[0].volume_size", "[0-9]+"]),
    ("plan", {"boot": {}}, ["There is no such operation: boot"]),
    ("heartbeat", {"driver": "d" * 65, "nodes": ["n"]}, ["'driver'", "1 to 64 characters"]),
])
def test_refusals_name_the_field_and_what_is_allowed(name: str, body: Any,
                                                     words: list[str]) -> None:
    message = _message(name, body)
    for word in words:
        assert word in message, message


def test_long_values_are_cut_in_messages() -> None:
    message = _message("create_flavor", {"flavor": {**FLAVOR, "name": "x" * 100_000}})
    assert len(message) < 300 and "..." in message


@pytest.mark.parametrize(("name", "body"), [
    ("create_flavor", {"flavor": {**FLAVOR, "swap": "", "ram": "512",
                                  "os-flavor-access:is_public": "False",
                                  "extra_specs": {"hw:cpu_policy": "dedicated"}}}),
    ("create_server", {"server": {**SERVER, "networks": "none", "min_count": 1}}),
    # openstacksdk's boot from volume: the size as a string, as nova takes it.
    ("create_server", {"server": {**SERVER, "block_device_mapping_v2": [
        {"boot_index": "0", "source_type": "image", "destination_type": "volume",
         "uuid": "x", "volume_size": "1", "delete_on_termination": True}]}}),
    ("server_action", {"confirmResize": None}),
    ("aggregate_action", {"set_metadata": {"metadata": {"a": None, "b": "c"}}}),
    ("update_image", {"properties": {"hw_disk_bus": None}}),
    ("heartbeats", {"services": [{"host": "h", "driver": "fake", "nodes": ["h"]}],
                    "alive": ["g"]}),
])
def test_what_nova_and_the_agents_send_is_valid(name: str, body: Any) -> None:
    validate(VALIDATORS[name], body)


def test_documented_query_parameters_belong_to_reads_that_exist() -> None:
    reads = {operation["operationId"] for _, method, operation in _operations()
             if method == "get"}
    assert set(QUERY_PARAMETERS) <= reads
