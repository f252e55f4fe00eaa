"""The compute API schema: the migrations build exactly the tables the code declares,
and the stores round-trip the domain's values."""

from __future__ import annotations

import dataclasses
import datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext

from moorage.api.catalog import ApiCatalog
from moorage.api.errors import NotFound
from moorage.api.lookups import Definitions
from moorage.api.storage import (
    aggregates,
    catalog_state,
    compute_nodes,
    flavors,
    migration,
    services,
)
from moorage.api.storage.schema import metadata
from moorage.api.storage.schema import services as services_table
from moorage.db.database import Database
from moorage.lifecycle.states import ServerStatus
from moorage.lifecycle.store import instances_by_host
from moorage.model.flavor import Flavor
from moorage.placement.provider_names import provider_uuid
from tests.lifecycle_paths import bring


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
    assert migration.current_revision(db) == migration.head_revision() == "0016"


def _upgrade_to(db: Database, revision: str) -> None:
    config = Config()
    config.set_main_option("script_location", str(migration.MIGRATIONS.scripts))
    with db.engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, revision)


def test_0007_names_the_services_and_nodes_there_are(tmp_path: Path) -> None:
    """Services registered before 0007 get a uuid each, and a node row (an integer id)
    for each node they last reported."""
    db = Database(f"sqlite:///{tmp_path / 'old.sqlite'}")
    _upgrade_to(db, "0006")
    now = datetime.datetime(2026, 1, 1)
    with db.engine.begin() as conn:
        for host, nodes in (("h1", '["h1"]'), ("bm", '["n-a", "n-b"]'), ("idle", "[]")):
            conn.execute(sa.text(
                "INSERT INTO services (host, binary, driver, nodes, supported_instances, "
                "disabled, forced_down, created_at, updated_at, change_version) VALUES "
                "(:host, 'nova-compute', 'fake', :nodes, '[]', 0, 0, :now, :now, 1)"),
                {"host": host, "nodes": nodes, "now": now})
    migration.upgrade(db)
    with db.reader() as conn:
        found = services.list_services(conn)
        nodes = compute_nodes.list_nodes(conn)
    assert len({s.uuid for s in found}) == 3
    by_id = {s.id: s.host for s in found}
    assert [(by_id[n.service_id], n.hypervisor_hostname) for n in nodes] == [
        ("h1", "h1"), ("bm", "n-a"), ("bm", "n-b")]
    assert [n.id for n in nodes] == [1, 2, 3]


def test_heartbeats_keep_node_ids_and_delete_takes_them(db: Database) -> None:
    with db.writer() as writer:
        record = services.record_heartbeat(writer.conn, dataclasses.replace(
            _beat("bm"), nodes=["n-a", "n-b"]))
        services.record_heartbeat(writer.conn, _beat("h1"))
        services.record_heartbeat(writer.conn, dataclasses.replace(
            _beat("bm"), nodes=["n-b", "n-c"]))
    with db.reader() as conn:
        assert [(n.id, n.hypervisor_hostname) for n in compute_nodes.list_nodes(conn)] == [
            (2, "n-b"), (3, "h1"), (4, "n-c")]
    with db.writer() as writer:
        services.delete_service(writer.conn, record.id)
    with db.reader() as conn:
        assert [n.hypervisor_hostname for n in compute_nodes.list_nodes(conn)] == ["h1"]


def test_flavor_round_trip_and_not_found(db: Database) -> None:
    flavor = Flavor("m1", 2, 2048, 10, extra_specs={"trait:CUSTOM_X": "required"})
    with db.writer() as writer:
        flavors.create_flavor(writer.conn, flavors.FlavorRecord("f1", flavor))
    with db.reader() as conn:
        assert flavors.load_flavor(conn, "f1").flavor == flavor
        with pytest.raises(NotFound, match="Flavor nope could not be found"):
            flavors.load_flavor(conn, "nope")


def _beat(host: str) -> services.Heartbeat:
    return services.Heartbeat(host=host, binary="nova-compute", driver="fake",
                              nodes=[host], agent_url="http://127.0.0.1:1",
                              supported_instances=[("x86_64", "qemu", "hvm")],
                              hypervisor_version=7002000)


def test_catalog_hosts_up_enabled_and_instances(db: Database) -> None:
    with db.writer() as writer:
        services.record_heartbeat(writer.conn, _beat("h1"))
        services.record_heartbeat(writer.conn, _beat("h2"))
        services.record_heartbeat(writer.conn, _beat("h3"))
        h2 = services.load_service_by_host(writer.conn, "h2")
        services.update_service(writer.conn, h2.id, services.OperatorChange(disabled=True))
        old = datetime.datetime(2000, 1, 1)
        writer.conn.execute(services_table.update().where(services_table.c.host == "h3")
                            .values(updated_at=old))
    bring(db, "s1", (ServerStatus.ACTIVE, None), host="h1")
    bring(db, "s2", (ServerStatus.ACTIVE, None), host="h1")
    bring(db, "s3", (ServerStatus.DELETED, None), host="h1")
    with db.writer() as writer:
        agg = aggregates.create_aggregate(writer.conn, "a1", "az1")
        aggregates.add_host(writer.conn, agg.id, "h1")
    hosts = ApiCatalog(db, 60).hosts()
    assert (hosts["h1"].up, hosts["h1"].enabled) == (True, True)
    with db.reader() as conn:
        assert instances_by_host(conn) == {"h1": 2}
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
        services.update_service(writer.conn, record.id,
                                services.OperatorChange(forced_down=True))
    assert ApiCatalog(db, 60).hosts()["h1"].up is False


def test_a_catalog_keeps_up_with_every_change_after_it_loaded(db: Database) -> None:
    catalog = ApiCatalog(db, 60, liveness_interval=0)
    with db.writer() as writer:
        services.record_heartbeat(writer.conn, _beat("h1"))
    assert set(catalog.hosts()) == {"h1"}
    assert catalog.node_of_provider(provider_uuid("h1")) == ("h1", "h1")
    with db.writer() as writer:
        services.record_heartbeat(writer.conn, _beat("h2"))
        h1 = services.load_service_by_host(writer.conn, "h1")
        services.update_service(writer.conn, h1.id, services.OperatorChange(disabled=True))
        agg = aggregates.create_aggregate(writer.conn, "a1", None)
        aggregates.add_host(writer.conn, agg.id, "h2")
    hosts = catalog.hosts()
    assert set(hosts) == {"h1", "h2"} and not hosts["h1"].enabled and hosts["h2"].enabled
    assert [a.name for a in catalog.aggregates_of("h2")] == ["a1"]
    assert catalog.aggregates_of("h1") == ()
    with db.writer() as writer:
        services.delete_service(writer.conn, h1.id)
    assert set(catalog.hosts()) == {"h2"}
    assert catalog.node_of_provider(provider_uuid("h1")) is None


def test_heartbeats_refresh_liveness_without_a_new_catalog_version(db: Database) -> None:
    with db.writer() as writer:
        services.record_heartbeat(writer.conn, _beat("h1"))
        stale = datetime.datetime(2000, 1, 1)
        writer.conn.execute(services_table.update().where(services_table.c.host == "h1")
                            .values(updated_at=stale))
    catalog = ApiCatalog(db, 60, liveness_interval=0)
    info = catalog.hosts()["h1"]
    assert info.up is False
    with db.reader() as conn:
        before = catalog_state.read(conn)
    with db.writer() as writer:
        services.record_heartbeat(writer.conn, _beat("h1"))  # same report: a heartbeat
    with db.reader() as conn:
        assert catalog_state.read(conn) == before
    catalog.hosts()
    # The snapshot handed out before sees the heartbeat too.
    assert info.up is True
    with db.writer() as writer:  # a changed report is a catalog change
        services.record_heartbeat(writer.conn, dataclasses.replace(
            _beat("h1"), supported_instances=[("aarch64", "qemu", "hvm")]))
    assert catalog.hosts()["h1"].supported_instances == (("aarch64", "qemu", "hvm"),)


class _CountingLiveness(dict):  # type: ignore[type-arg]
    """The catalog's liveness by host, counting the heartbeat rows it is handed."""

    looked_up = 0

    def get(self, key, default=None):  # type: ignore[no-untyped-def]
        self.looked_up += 1
        return super().get(key, default)


def _stamp(db: Database, hosts: list[str], moment: datetime.datetime) -> None:
    with db.writer() as writer:
        writer.conn.execute(services_table.update().where(services_table.c.host.in_(hosts))
                            .values(updated_at=moment))


def test_a_fleets_beat_is_read_again_only_until_it_settles(
        db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """Heartbeats stamped with the newest second are read again while a beat of that
    second may still commit, then no more: a fleet stamps thousands of hosts at once,
    and the API must not read them all at every refresh until the next beat."""
    with db.writer() as writer:
        for host in ("h1", "h2", "h3"):
            services.record_heartbeat(writer.conn, _beat(host))
    beat = datetime.datetime.now(datetime.UTC).replace(tzinfo=None, microsecond=0)
    _stamp(db, ["h1", "h2"], beat)
    _stamp(db, ["h3"], beat - datetime.timedelta(seconds=30))
    catalog = ApiCatalog(db, 60, liveness_interval=0)
    hosts = catalog.hosts()
    counting = catalog._liveness = _CountingLiveness(catalog._liveness)
    # Not settled: a beat of the same second committed after the read is seen.
    _stamp(db, ["h3"], beat)
    catalog.hosts()
    assert counting.looked_up == 3
    assert hosts["h3"].liveness.last_seen == beat.replace(tzinfo=datetime.UTC).timestamp()
    # Settled: the hosts of the newest second are not read again...
    monkeypatch.setattr("moorage.api.catalog._SETTLE", 0.0)
    counting.looked_up = 0
    catalog.hosts()
    catalog.hosts()
    assert counting.looked_up == 0
    # ...and a newer beat is read alone.
    later = beat + datetime.timedelta(seconds=2)
    _stamp(db, ["h2"], later)
    catalog.hosts()
    assert counting.looked_up == 1
    assert hosts["h2"].liveness.last_seen == later.replace(tzinfo=datetime.UTC).timestamp()
    assert hosts["h1"].liveness.last_seen == beat.replace(tzinfo=datetime.UTC).timestamp()


def test_definitions_forget_a_deleted_flavor_at_the_next_refresh(db: Database) -> None:
    """A boot's lookups share one check: what was deleted before that check is gone,
    and a lookup that checks for itself sees it too."""
    definitions = Definitions(db)
    with db.writer() as writer:
        flavors.create_flavor(writer.conn, flavors.FlavorRecord("f1", Flavor("m1", 1, 512, 1)))
    assert definitions.flavor("f1").flavor.name == "m1"
    with db.writer() as writer:
        flavors.delete_flavor(writer.conn, "f1")
    # Remembered until something checks...
    assert definitions.flavor("f1", refreshed=True).flavor.name == "m1"
    # ...which a boot does once before its lookups, and a lone lookup by itself.
    definitions.refresh()
    with pytest.raises(NotFound, match="Flavor f1 could not be found"):
        definitions.flavor("f1", refreshed=True)
    with db.writer() as writer:
        flavors.create_flavor(writer.conn, flavors.FlavorRecord("f1", Flavor("m2", 1, 512, 1)))
    assert definitions.flavor("f1").flavor.name == "m2"


def test_0014_keeps_images_bootable_and_their_properties(tmp_path: Path) -> None:
    """Images registered before the image service have no data: they become active,
    unprotected, not hidden, not deleted, and the compute API reads them as before."""
    from moorage.api.storage import images as image_store
    from moorage.image import store as image_service_store

    db = Database(f"sqlite:///{tmp_path / 'old.sqlite'}")
    _upgrade_to(db, "0010")
    now = datetime.datetime(2026, 1, 1)
    with db.engine.begin() as conn:
        conn.execute(sa.text(
            "INSERT INTO images (id, name, disk_format, container_format, min_disk, min_ram, "
            "owner, visibility, properties, created_at, updated_at) VALUES ('i1', 'old', "
            "'vmdk', 'bare', 1, 2, 'p1', 'private', '{\"hw_vif_model\": \"e1000\"}', :now, "
            ":now)"), {"now": now})
    migration.upgrade(db)
    with db.reader() as conn:
        record = image_store.load_image_record(conn, "i1")
        stored = image_service_store.load(conn, "i1")
    assert (record.image.disk_format, record.image.properties.hw_vif_model) == ("vmdk",
                                                                                "e1000")
    assert stored is not None
    assert (stored.status.value, stored.protected, stored.os_hidden, stored.size) == (
        "active", False, False, None)
