"""``moorage server create|list|show|delete|rebuild|resize|migrate|evacuate``.

``server show`` says where a server runs and, when it does not, why: its fault and
the scheduler's record (what each request filter added, how many candidates
placement offered, each host tried and what it answered). ``--wait`` follows an
operation to its end, reporting each change on stderr; an operation that ends in
ERROR exits 1 with the fault's message.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TextIO

from cliff.columns import FormattableColumn
from cliff.command import Command
from cliff.lister import Lister
from cliff.show import ShowOne

from moorage.api.client import ComputeApiClient, ComputeApiError, Json, server_body
from moorage.cli.api_options import add_api_arguments, api_client, find
from moorage.cli.flavor import find_flavor
from moorage.cli.image import find_image
from moorage.lifecycle import machine
from moorage.lifecycle.states import ServerStatus
from moorage.model.discretion import Floor
from moorage.scheduler.decisions import Decisions, Exclusion
from moorage.scheduler.filter_records import CorruptFilterRecord, FilterRecord

HOST = "OS-EXT-SRV-ATTR:host"
NODE = "OS-EXT-SRV-ATTR:hypervisor_hostname"
TASK_STATE = "OS-EXT-STS:task_state"
ZONE = "OS-EXT-AZ:availability_zone"
SCHEDULING = "moorage:scheduling"

ERROR = str(ServerStatus.ERROR)
# What each operation ends in when it succeeds. Ending in another settled status is
# a failure: ERROR, or a move given up that left the server ACTIVE where it was.
SUCCESS = {
    "create": {"ACTIVE"},
    "rebuild": {"ACTIVE"},
    "evacuate": {"ACTIVE"},
    # A cold migration is confirmed (or reverted) like a resize, as in nova.
    "resize": {"VERIFY_RESIZE"},
    "migrate": {"VERIFY_RESIZE"},
    "confirm": {"ACTIVE"},
    "revert": {"ACTIVE"},
}
DEFAULT_WAIT_INTERVAL = 1.0
DEFAULT_WAIT_TIMEOUT = 600.0


def find_server(client: ComputeApiClient, ref: str) -> Json:
    """A server by id, or by exact name (listed with the API's name filter, which is
    a regular expression, as nova's)."""
    return find("server", ref, client.server,
                lambda: client.servers([("name", f"^{re.escape(ref)}$")]))


# -- showing a server ----------------------------------------------------------------------
class FaultColumn(FormattableColumn[Mapping[str, Any] | None]):
    """Why a server is in ERROR: "code: message" and the details below it in tables;
    the API's object in JSON/YAML."""

    def human_readable(self) -> str:
        return fault_text(self._value)


class SchedulingColumn(FormattableColumn[Mapping[str, Any]]):
    """The scheduler's record, one line per fact in tables; the API's object in
    JSON/YAML."""

    def human_readable(self) -> str:
        return "\n".join(scheduling_lines(self._value))


def fault_text(fault: Mapping[str, Any] | None) -> str:
    if not fault:
        return ""
    lines = [f"{fault.get('code', '')}: {fault.get('message', '')}".lstrip(": ")]
    details = fault.get("details")
    if isinstance(details, Mapping):
        for key, value in details.items():
            if key == "decisions" and isinstance(value, Mapping):
                lines.append("  decisions:")
                lines.extend(f"    {line}" for line in decision_lines(value))
            else:
                lines.append(f"  {key}: {_compact(value)}")
    elif details:
        lines.extend(f"  {line}" for line in str(details).splitlines())
    return "\n".join(lines)


def _compact(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _words(values: Iterable[Any]) -> str:
    return ", ".join(str(v) for v in values)


def filter_line(data: Mapping[str, Any]) -> str:
    """``transform_image_metadata: required host trait COMPUTE_NET_VIF_MODEL_E1000
    (image property hw_vif_model=e1000); note: ...``. A record in neither of the forms
    the scheduler stores is shown as the API gave it."""
    try:
        record = FilterRecord.from_json(data)
    except CorruptFilterRecord:
        return f"{data.get('name', '?')}: {_compact(data)}"
    if not record.ran:
        text = "off"
    elif record.added:
        text = "; ".join(addition.describe() for addition in record.added)
    else:
        text = "ran, added nothing"
    text += "".join(f"; note: {note}" for note in record.notes)
    return f"{record.name}: {text}"


def attempt_line(number: int, attempt: Mapping[str, Any]) -> str:
    """``2. compute-3: failed, UnsupportedHardware: the vif model e1000 ...``"""
    where = attempt.get("host") or "?"
    if attempt.get("node") and attempt.get("node") != where:
        where += f" ({attempt['node']})"
    result = attempt.get("result") or "?"
    why = ": ".join(str(attempt[k]) for k in ("kind", "message") if attempt.get(k))
    return f"{number}. {where}: {result}" + (f", {why}" if why else "")


def exclusion_line(exclusion: Exclusion) -> str:
    """``placement: required host trait X (from image property hw_vif_model=x):
    excludes 3 of 4 hosts: big, q1, q2``; hosts only when the API showed them."""
    text = exclusion.describe()
    if exclusion.reasons:
        text += " (" + ", ".join(f"{n} {why}" for why, n in exclusion.reasons.items()) + ")"
    if exclusion.hosts:
        omitted = exclusion.hosts_omitted
        text += ": " + _words(exclusion.hosts) + (f" and {omitted} more" if omitted else "")
    return f"{exclusion.stage}: {text}"


def told_lines(data: Mapping[str, object]) -> list[str]:
    """The decisions as a user who may not see hosts is shown them: no count below
    ``host_floor`` (null), each fact in the API's own words."""
    floor = Floor(int(str(data["host_floor"])))

    def told(n: object) -> str:
        return str(n) if n is not None else floor.said(None)

    lines = [f"hosts counted: {told(data['hosts'])}"] if "hosts" in data else []
    exclusions = data.get("exclusions")
    for exclusion in exclusions if isinstance(exclusions, list) else ():
        text = f"{exclusion.get('stage', '?')}: {exclusion.get('description', '?')}"
        reasons = exclusion.get("reasons") or {}
        if reasons:
            text += " (" + ", ".join(f"{told(n)} {why}" for why, n in reasons.items()) + ")"
        lines.append(text)
    for part in (data.get("together"), data.get("relaxed")):
        if isinstance(part, Mapping) and "description" in part:
            lines.append(str(part["description"]))
    notes = data.get("notes")
    lines += [f"note: {note}" for note in (notes if isinstance(notes, list) else ())]
    return lines


def decision_lines(data: Mapping[str, Any]) -> list[str]:
    """The scheduler's decisions (scheduler/decisions.py), one fact per line."""
    if "host_floor" in data:
        return told_lines(data)
    decisions = Decisions.from_json(data)
    lines = [f"hosts counted: {decisions.hosts}"] if decisions.hosts is not None else []
    lines += [exclusion_line(e) for e in decisions.exclusions if e.excluded]
    if decisions.together is not None:
        lines.append(decisions.together.describe())
    if decisions.relaxed is not None:
        lines.append(decisions.relaxed.describe())
    lines += [f"note: {note}" for note in decisions.notes]
    if decisions.weighed:
        lines.append("weighed: " + _words(f"{w.host} {w.weight:g}" for w in decisions.weighed))
    if decisions.claims_failed:
        lines.append(f"claims lost: {_words(decisions.claims_failed)}")
    if decisions.chosen:
        lines.append(f"chosen: {decisions.chosen}"
                     + (f"; alternates: {_words(decisions.alternates)}"
                        if decisions.alternates else ""))
    return lines


def scheduling_lines(record: Mapping[str, Any]) -> list[str]:
    lines: list[str] = []
    filters = record.get("filters") or []
    if filters:
        lines.append("request filters:")
        lines.extend(f"  {filter_line(f)}" for f in filters)
    if "candidates" in record:
        told = record["candidates"]
        lines.append(f"candidates: {told if told is not None else 'fewer than the host floor'}")
    decisions = record.get("decisions")
    if isinstance(decisions, Mapping):
        lines.append("decisions:")
        lines.extend(f"  {line}" for line in decision_lines(decisions))
    attempts = record.get("attempts") or []
    if attempts:
        lines.append("attempts:")
        lines.extend(f"  {attempt_line(i, a)}" for i, a in enumerate(attempts, 1))
    for key, value in record.items():
        if key not in ("filters", "candidates", "attempts", "decisions"):
            lines.append(f"{key}: {_compact(value)}")
    return lines


def plan_lines(plan: Mapping[str, Any]) -> list[str]:
    """A dry run's plan, for people."""
    if plan.get("schedulable"):
        where = plan.get("host") or "a host (hidden from you by policy)"
        lines = [f"{plan.get('operation')} would go to {where}"]
        if plan.get("alternates"):
            lines.append(f"alternates: {_words(plan['alternates'])}")
        for refusal in plan.get("refusals") or ():
            where = ("the chosen host" if refusal.get("position") == 0
                     else f"alternate {refusal.get('position')}")
            named = f" ({refusal['host']})" if refusal.get("host") else ""
            lines.append(f"will refuse: {where}{named}: {_words(refusal.get('traits') or ())}"
                         f": {refusal.get('detail')}")
        for difference in plan.get("may_differ") or ():
            hosts = difference.get("hosts")
            lines.append(f"may differ: {difference.get('source')}: {difference.get('detail')}"
                         + (f" (the boot may choose {_words(hosts)})" if hosts else ""))
    else:
        lines = [f"{plan.get('operation')} would fail: {plan.get('message')}"]
    lines += [f"request filter {filter_line(f)}" for f in plan.get("filters") or ()
              if f.get("ran")]
    lines += decision_lines(plan.get("decisions") or {})
    return lines


def flavor_name(server: Json) -> str:
    """The server's flavor: nova 2.47+ embeds it (original_name); older versions link it."""
    flavor = server.get("flavor") or {}
    return str(flavor.get("original_name") or flavor.get("name") or flavor.get("id") or "")


def image_name(server: Json) -> str:
    image = server.get("image")
    if not image:
        return "N/A (booted from volume)"
    return str(image.get("name") or image.get("id") or "")


def server_fields(server: Json) -> dict[str, Any]:
    return {
        "id": server.get("id"),
        "name": server.get("name"),
        "status": server.get("status"),
        "task_state": server.get(TASK_STATE),
        "host": server.get(HOST),
        "node": server.get(NODE),
        "availability_zone": server.get(ZONE),
        "flavor": flavor_name(server),
        "image": image_name(server),
        "created": server.get("created"),
        "updated": server.get("updated"),
        "fault": FaultColumn(server.get("fault")),
        "scheduling": SchedulingColumn(server.get(SCHEDULING) or {}),
    }


def _show(server: Json) -> tuple[Sequence[str], Any]:
    fields = server_fields(server)
    return tuple(fields), tuple(fields.values())


# -- waiting ----------------------------------------------------------------------
class ServerFailed(ComputeApiError):
    """An operation ended in ERROR (or never ended): the message says why."""


def progress_line(server: Json) -> str:
    status = str(server.get("status"))
    task = server.get(TASK_STATE)
    where = f" on {server[HOST]}" if server.get(HOST) else ""
    return f"server {server.get('name') or server.get('id')}: {status}" + (
        f" ({task})" if task else "") + where


def wait_for(client: ComputeApiClient, server_id: str, operation: str, progress: TextIO, *,
             interval: float = DEFAULT_WAIT_INTERVAL, timeout: float = DEFAULT_WAIT_TIMEOUT,
             clock: Callable[[], float] = time.monotonic,
             sleep: Callable[[float], None] = time.sleep) -> Json:
    """Poll a server until ``operation`` ends, that is until no task is in progress
    and its status is a settled one: the server when that is the operation's success
    status, else ServerFailed with the fault's message. Each change of status and
    each host tried is written to ``progress``."""
    success = SUCCESS[operation]
    deadline = clock() + timeout
    shown_state: tuple[Any, ...] | None = None
    shown_attempts = 0
    while True:
        server = client.server(server_id)
        state = (server.get("status"), server.get(TASK_STATE), server.get(HOST))
        if state != shown_state:
            progress.write(progress_line(server) + "\n")
            shown_state = state
        attempts = (server.get(SCHEDULING) or {}).get("attempts") or []
        for number, attempt in enumerate(attempts[shown_attempts:], shown_attempts + 1):
            progress.write(f"  attempt {attempt_line(number, attempt)}\n")
        shown_attempts = max(shown_attempts, len(attempts))
        progress.flush()
        status = server.get("status")
        if machine.at_rest(str(status), server.get(TASK_STATE)):
            if status in success:
                return server
            raise ServerFailed(failure_message(server, operation, success))
        if clock() >= deadline:
            raise ServerFailed(
                f"server {server_id} is still {status} after {timeout:g}s; "
                f"the {operation} goes on: follow it with `moorage server show {server_id}`")
        sleep(interval)


def failure_message(server: Json, operation: str, success: Iterable[str] = ()) -> str:
    """One line: the operation, where the server ended, and why (its fault; for a
    move given up, the scheduler's error or the last host that refused it)."""
    status = str(server.get("status"))
    if status != ERROR and success:
        status += f", not {' or '.join(sorted(success))}"
    fault = server.get("fault") or {}
    why = str(fault.get("message") or (server.get(SCHEDULING) or {}).get("error") or ""
              ).strip()
    if not why:
        refused = [a for a in (server.get(SCHEDULING) or {}).get("attempts") or []
                   if a.get("result") not in (None, "ok")]
        why = (attempt_line(len(refused), refused[-1]).split(". ", 1)[1] if refused
               else "no fault recorded")
    return f"{operation} of server {server.get('id')} failed: {status}: " + (
        why.splitlines()[0])


def wait_until_gone(client: ComputeApiClient, server_id: str, progress: TextIO, *,
                    interval: float = DEFAULT_WAIT_INTERVAL,
                    timeout: float = DEFAULT_WAIT_TIMEOUT,
                    clock: Callable[[], float] = time.monotonic,
                    sleep: Callable[[float], None] = time.sleep) -> None:
    """Poll until the server is gone (404 or DELETED); ServerFailed on ERROR."""
    deadline = clock() + timeout
    shown: tuple[Any, ...] | None = None
    while True:
        try:
            server = client.server(server_id)
        except ComputeApiError as exc:
            if exc.not_found:
                progress.write(f"server {server_id}: deleted\n")
                progress.flush()
                return
            raise
        if server.get("status") == "DELETED":
            return
        state = (server.get("status"), server.get(TASK_STATE))
        if state != shown:
            progress.write(progress_line(server) + "\n")
            progress.flush()
            shown = state
        if server.get("status") == ERROR and server.get(TASK_STATE) is None:
            raise ServerFailed(failure_message(server, "delete"))
        if clock() >= deadline:
            raise ServerFailed(f"server {server_id} is still there after {timeout:g}s")
        sleep(interval)


def add_dry_run_argument(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--dry-run", action="store_true",
                        help=f"change nothing: show where the scheduler would move the "
                        f"server now and why (the {what}'s plan; exit 1 if nowhere)")


def add_wait_arguments(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--wait", action="store_true",
                        help=f"wait until the {what} ends, reporting progress on stderr; "
                        "exit 1 if it ends in ERROR")
    parser.add_argument("--wait-interval", type=float, default=DEFAULT_WAIT_INTERVAL,
                        metavar="SECONDS", help=argparse.SUPPRESS)
    parser.add_argument("--wait-timeout", type=float, default=DEFAULT_WAIT_TIMEOUT,
                        metavar="SECONDS",
                        help=f"give up waiting after this long (default "
                        f"{DEFAULT_WAIT_TIMEOUT:g})")


# -- commands ----------------------------------------------------------------------
class ServerCreate(ShowOne):
    """Create a server; the scheduler places it (see `server show` for how)."""

    failure: str | None = None

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        add_api_arguments(parser)
        parser.add_argument("name", help="the new server's name")
        parser.add_argument("--flavor", required=True, help="flavor name or id")
        parser.add_argument("--image", required=True, help="image name or id")
        parser.add_argument("--availability-zone", metavar="ZONE",
                            help="the availability zone to place it in")
        parser.add_argument("--boot-from-volume", type=int, metavar="SIZE",
                            help="boot from a new SIZE GB volume made from the image "
                            "(the flavor's root disk is then not used)")
        parser.add_argument("--host", help="the host to build it on (administrators)")
        parser.add_argument("--dry-run", action="store_true",
                            help="create nothing: show where the scheduler would place it "
                            "now, its alternates and its decisions (exit 1 if nowhere)")
        add_wait_arguments(parser, "build")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple[Sequence[str], Any]:
        if parsed_args.boot_from_volume is not None and parsed_args.boot_from_volume < 1:
            raise ValueError("--boot-from-volume expects a size in GB of at least 1, "
                             f"got {parsed_args.boot_from_volume}")
        client = api_client(parsed_args, self.app.options)
        flavor = find_flavor(client, parsed_args.flavor)
        image = find_image(client, parsed_args.image)
        body = server_body(parsed_args.name, str(flavor["id"]), str(image["id"]),
                           availability_zone=parsed_args.availability_zone,
                           boot_volume_size=parsed_args.boot_from_volume,
                           host=parsed_args.host)
        if parsed_args.dry_run:
            plan = client.plan("server", body)
            if not plan.get("schedulable"):
                self.failure = f"dry run: no host for {parsed_args.name}"
            return _show_plan(plan)
        created = client.create_server(
            parsed_args.name, str(flavor["id"]), str(image["id"]),
            availability_zone=parsed_args.availability_zone,
            boot_volume_size=parsed_args.boot_from_volume, host=parsed_args.host)
        server_id = str(created["id"])
        if not parsed_args.wait:
            return _show(client.server(server_id))
        try:
            server = wait_for(client, server_id, "create", self.app.stderr,
                              interval=parsed_args.wait_interval,
                              timeout=parsed_args.wait_timeout)
        except ServerFailed as exc:
            # Show the fault and the scheduler's record, then fail.
            self.failure = str(exc)
            server = client.server(server_id)
        return _show(server)

    def run(self, parsed_args: argparse.Namespace) -> int:
        code = super().run(parsed_args)
        if self.failure:
            self.app.stderr.write(self.failure + "\n")
            return 1
        return code


class PlanColumn(FormattableColumn[Mapping[str, Any]]):
    """A dry run's plan, one line per fact in tables; the API's object in JSON/YAML."""

    def human_readable(self) -> str:
        return "\n".join(plan_lines(self._value))


def _show_plan(plan: Mapping[str, Any]) -> tuple[Sequence[str], Any]:
    columns = ("schedulable", "host", "alternates", "plan")
    return columns, (plan.get("schedulable"), plan.get("host") or "",
                     _words(plan.get("alternates") or ()), PlanColumn(plan))


def print_plan(plan: Mapping[str, Any], out: TextIO) -> int:
    """A move's dry run on ``out``; 1 when it would find no host."""
    out.write("\n".join(plan_lines(plan)) + "\n")
    return 0 if plan.get("schedulable") else 1


class ServerList(Lister):
    """List servers, newest first."""

    COLUMNS = ("id", "name", "status", "host", "flavor", "image")

    @property
    def need_sort_by_cliff(self) -> bool:
        return False  # the API's order

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        add_api_arguments(parser)
        parser.add_argument("--status", help="only servers in this status (ACTIVE, ERROR...)")
        parser.add_argument("--host", help="only servers on this host")
        parser.add_argument("--name", help="only servers whose name matches this "
                            "regular expression (nova's name filter)")
        parser.add_argument("--all-projects", action="store_true",
                            help="servers of every project (administrators)")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple[Sequence[str], Any]:
        params = [(key, value) for key, value in (
            ("status", parsed_args.status), ("host", parsed_args.host),
            ("name", parsed_args.name)) if value]
        if parsed_args.all_projects:
            params.append(("all_tenants", "1"))
        rows = [
            (s.get("id"), s.get("name"), s.get("status"), s.get(HOST), flavor_name(s),
             image_name(s))
            for s in api_client(parsed_args, self.app.options).servers(params)
        ]
        return self.COLUMNS, rows


class ServerShow(ShowOne):
    """Show a server: where it runs, its fault, and how the scheduler placed it."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        add_api_arguments(parser)
        parser.add_argument("server", help="server name or id")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple[Sequence[str], Any]:
        return _show(find_server(api_client(parsed_args, self.app.options), parsed_args.server))


class ServerDelete(Command):
    """Delete servers."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        add_api_arguments(parser)
        parser.add_argument("servers", nargs="+", metavar="SERVER",
                            help="server name or id (repeatable)")
        add_wait_arguments(parser, "deletion")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> Any:
        client = api_client(parsed_args, self.app.options)
        ids = [str(find_server(client, ref)["id"]) for ref in parsed_args.servers]
        for server_id in ids:
            client.delete_server(server_id)
        if parsed_args.wait:
            for server_id in ids:
                wait_until_gone(client, server_id, self.app.stderr,
                                interval=parsed_args.wait_interval,
                                timeout=parsed_args.wait_timeout)
        return 0


class _ServerAction(Command):
    """One POST /servers/{id}/action; ``--wait`` follows it to its end."""

    operation = ""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        add_api_arguments(parser)
        parser.add_argument("server", help="server name or id")
        self.add_arguments(parser)
        add_wait_arguments(parser, self.operation)
        return parser

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """The action's own arguments."""

    def act(self, client: ComputeApiClient, server_id: str,
            parsed_args: argparse.Namespace) -> None:
        raise NotImplementedError

    def plan(self, client: ComputeApiClient, server_id: str,
             parsed_args: argparse.Namespace) -> Json:
        """The dry run of the action (moves only)."""
        raise NotImplementedError

    def take_action(self, parsed_args: argparse.Namespace) -> Any:
        client = api_client(parsed_args, self.app.options)
        server_id = str(find_server(client, parsed_args.server)["id"])
        if getattr(parsed_args, "dry_run", False):
            return print_plan(self.plan(client, server_id, parsed_args), self.app.stdout)
        self.act(client, server_id, parsed_args)
        if parsed_args.wait:
            server = wait_for(client, server_id, self.operation, self.app.stderr,
                              interval=parsed_args.wait_interval,
                              timeout=parsed_args.wait_timeout)
            self.app.stderr.write(f"{self.operation} done: {progress_line(server)}\n")
        return 0


class ServerRebuild(_ServerAction):
    """Rebuild a server from an image (its host must support the image)."""

    operation = "rebuild"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--image", required=True, help="image name or id")

    def act(self, client: ComputeApiClient, server_id: str,
            parsed_args: argparse.Namespace) -> None:
        client.rebuild_server(server_id, str(find_image(client, parsed_args.image)["id"]))


class ServerResize(_ServerAction):
    """Resize a server to another flavor; confirm or revert it afterwards."""

    operation = "resize"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--flavor", required=True, help="flavor name or id")
        add_dry_run_argument(parser, "resize")

    def act(self, client: ComputeApiClient, server_id: str,
            parsed_args: argparse.Namespace) -> None:
        client.resize_server(server_id, str(find_flavor(client, parsed_args.flavor)["id"]))

    def plan(self, client: ComputeApiClient, server_id: str,
             parsed_args: argparse.Namespace) -> Json:
        return client.plan("resize", {"server_id": server_id, "flavorRef": str(
            find_flavor(client, parsed_args.flavor)["id"])})


class ServerResizeConfirm(_ServerAction):
    """Confirm a resize or migration (VERIFY_RESIZE): the source host is freed."""

    operation = "confirm"

    def act(self, client: ComputeApiClient, server_id: str,
            parsed_args: argparse.Namespace) -> None:
        client.confirm_resize(server_id)


class ServerResizeRevert(_ServerAction):
    """Revert a resize or migration (VERIFY_RESIZE): back to the source host."""

    operation = "revert"

    def act(self, client: ComputeApiClient, server_id: str,
            parsed_args: argparse.Namespace) -> None:
        client.revert_resize(server_id)


class ServerMigrate(_ServerAction):
    """Move a server to another host (cold migration; the scheduler chooses unless
    --host)."""

    operation = "migrate"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--host", help="the destination host (administrators)")
        add_dry_run_argument(parser, "migration")

    def act(self, client: ComputeApiClient, server_id: str,
            parsed_args: argparse.Namespace) -> None:
        client.migrate_server(server_id, parsed_args.host)

    def plan(self, client: ComputeApiClient, server_id: str,
             parsed_args: argparse.Namespace) -> Json:
        return client.plan("migrate", {"server_id": server_id, "host": parsed_args.host})


class ServerEvacuate(_ServerAction):
    """Rebuild a server of a down host elsewhere."""

    operation = "evacuate"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--host", help="the destination host (administrators)")

    def act(self, client: ComputeApiClient, server_id: str,
            parsed_args: argparse.Namespace) -> None:
        client.evacuate_server(server_id, parsed_args.host)


class MigrationList(Lister):
    """List migrations, resizes and evacuations."""

    COLUMNS = ("id", "uuid", "server", "type", "source", "destination", "status",
               "created", "updated")

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        add_api_arguments(parser)
        parser.add_argument("--server", help="only the moves of this server (name or id)")
        parser.add_argument("--host", help="only moves from or to this host")
        parser.add_argument("--status", help="only moves in this status")
        parser.add_argument("--type", dest="migration_type",
                            choices=["migration", "resize", "evacuation"],
                            help="only moves of this kind")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple[Sequence[str], Any]:
        client = api_client(parsed_args, self.app.options)
        params = [(key, value) for key, value in (
            ("host", parsed_args.host), ("status", parsed_args.status),
            ("migration_type", parsed_args.migration_type)) if value]
        if parsed_args.server:
            params.append(("instance_uuid", str(find_server(client, parsed_args.server)["id"])))
        rows = [
            (m.get("id"), m.get("uuid"), m.get("instance_uuid"), m.get("migration_type"),
             m.get("source_compute"), m.get("dest_compute"), m.get("status"),
             m.get("created_at"), m.get("updated_at"))
            for m in client.migrations(params)
        ]
        return self.COLUMNS, rows


COMMANDS: dict[str, type[Command]] = {
    "server create": ServerCreate,
    "server list": ServerList,
    "server show": ServerShow,
    "server delete": ServerDelete,
    "server rebuild": ServerRebuild,
    "server resize": ServerResize,
    "server resize confirm": ServerResizeConfirm,
    "server resize revert": ServerResizeRevert,
    "server migrate": ServerMigrate,
    "server evacuate": ServerEvacuate,
    "server migration list": MigrationList,
}
