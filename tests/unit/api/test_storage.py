"""The compute API schema: the migrations build exactly the tables the code declares,
and the stores round-trip the domain's values."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from moorage.api.catalog import ApiCatalog
from moorage.api.errors import NotFound
from moorage.api.storage import aggregates, flavors, migration, services
from moorage.api.storage.schema import metadata
from moorage.api.storage.schema import services as services_table
from moorage.lifecycle.records import ServerRecord
from moorage.lifecycle.store import insert_server
from moorage.model.flavor import Flavor
from moorage.model.image import Image
from moorage.placement.storage.database import Database


@pytest.fixture
def db(tmp_path: Path) -> Database:
    database = Database(f"sqlite:///{tmp_path / 'api.sqlite'}")
    migration.upgrade(database)
    return database


def test_migrations_match_the_schema(db: Database) -> None:
    assert migration.current_revision(db) == migration.head_revision()
    with db.engine.connect() as conn:
        differences = compare_metadata(
            MigrationContext.configure(conn), metadata)
    # Only the version table, which the schema does not declare.
    assert [d for d in differences
            if not (d[0] == "remove_table" and d[1].name == "api_alembic_version")] == []


def test_upgrade_twice_is_harmless(db: Database) -> None:
    migration.upgrade(db)
    assert migration.current_revision(db) == migration.head_revision() == "0002"


def test_flavor_round_trip_and_not_found(db: Database) -> None:
    flavor = Flavor("m1", 2, 2048, 10, extra_specs={"trait:CUSTOM_X": "required"})
    with db.writer() as writer:
        flavors.create_flavor(writer.conn, flavors.FlavorRecord("f1", flavor))
    with db.reader() as conn:
        assert flavors.load_flavor(conn, "f1").flavor == flavor
        with pytest.raises(NotFound, match="Flavor nope could not be found"):
            flavors.load_flavor(conn, "nope")


def _beat(host: str) -> services.Heartbeat:
    return services.Heartbeat(host=host, binary="moorage-compute", driver="fake",
                              nodes=[host], agent_url="http://127.0.0.1:1",
                              supported_instances=[("x86_64", "qemu", "hvm")],
                              hypervisor_version=7002000)


def _server(uuid: str, host: str, status: str = "ACTIVE") -> ServerRecord:
    return ServerRecord(uuid=uuid, name=uuid, project_id="p", user_id="u", flavor_id="f",
                        flavor=Flavor("m", 1, 64), image_id="i", image=Image("i", "img"),
                        status=status, host=host)


def test_catalog_hosts_up_enabled_and_instances(db: Database) -> None:
    with db.writer() as writer:
        services.record_heartbeat(writer.conn, _beat("h1"))
        services.record_heartbeat(writer.conn, _beat("h2"))
        services.record_heartbeat(writer.conn, _beat("h3"))
        h2 = services.load_service_by_host(writer.conn, "h2")
        services.update_service(writer.conn, h2.id, disabled=True)
        old = datetime.datetime(2000, 1, 1)
        writer.conn.execute(services_table.update().where(services_table.c.host == "h3")
                            .values(updated_at=old))
        insert_server(writer.conn, _server("s1", "h1"))
        insert_server(writer.conn, _server("s2", "h1"))
        insert_server(writer.conn, _server("s3", "h1", status="DELETED"))
        agg = aggregates.create_aggregate(writer.conn, "a1", "az1")
        aggregates.add_host(writer.conn, agg.id, "h1")
    hosts = ApiCatalog(db, 60).hosts()
    assert (hosts["h1"].up, hosts["h1"].enabled, hosts["h1"].instances) == (True, True, 2)
    assert (hosts["h2"].up, hosts["h2"].enabled) == (True, False)
    assert hosts["h3"].up is False
    assert hosts["h1"].supported_instances == (("x86_64", "qemu", "hvm"),)
    [aggregate] = ApiCatalog(db, 60).aggregates()
    assert aggregate.hosts == frozenset({"h1"})
    assert aggregate.availability_zone == "az1"
    assert aggregate.metadata == {"availability_zone": "az1"}


def test_forced_down_service_is_down(db: Database) -> None:
    with db.writer() as writer:
        record = services.record_heartbeat(writer.conn, _beat("h1"))
        services.update_service(writer.conn, record.id, forced_down=True)
    assert ApiCatalog(db, 60).hosts()["h1"].up is False
