"""The compute agent's HTTP API: what the compute API's conductor asks of a host.

    GET    /               who this agent is: host, driver, nodes, version
    GET    /guests         the uuids of the guests the driver runs
    POST   /guests         spawn a guest, synchronously: 201, or 409 spawn_failed
    GET    /guests/{uuid}  200 if the driver runs this guest, 404 if not
    DELETE /guests/{uuid}  destroy a guest: 204, also when it is not there
    POST   /guests/{uuid}/power    {"action": "stop"|"start"|"reboot_soft"|
                           "reboot_hard"}: done, synchronously: 204, or 409 power_failed
    GET    /guests/{uuid}/console  {"console": {"output": ...}}: 404 no such guest, 501
                           its driver keeps no console
    GET    /host/uptime    {"uptime": "..."} (nova's line): 501 its driver cannot tell
    PUT    /service        {"disabled": bool}: COMPUTE_STATUS_DISABLED follows at once

A call about a guest may carry ``X-Moorage-Fence: OPERATION.TAKEOVER``, the operation
of the conductor making it: one older than the newest this agent has seen for that
guest is refused with 409 (``compute.client.Fence``), so a conductor that resumes
after its successor took its operation over cannot spawn or destroy behind it.

Every request carries ``X-Service-Token`` when ``[DEFAULT] service_token`` is set
(401 otherwise); unset, the writes are refused unless ``[DEFAULT]
allow_anonymous_internal_writes`` (development only) opens them
(``moorage.internal_access``).
Errors are ``{"error": {"message": ...}}``, never a traceback.

``moorage compute run`` serves ``make_app`` from the granian worker the agent lives
in (``agent_wsgi``). ``AgentHTTPServer`` serves it from a thread of the calling
process instead (a threaded wsgiref server): the embedded cloud and the tests run
several agents in one process that way.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Container, Mapping
from dataclasses import dataclass, field
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

import orjson

import moorage
from moorage import request_context
from moorage.compute import wire
from moorage.compute.agent import ComputeAgent
from moorage.compute.client import Fence
from moorage.internal_access import InternalAccess
from moorage.virt.driver import GuestNotFound
from moorage.web import (
    JSON,
    STATUS_LINES,
    Response,
    Router,
    ThreadedServer,
    json_body_problem,
)

LOG = logging.getLogger(__name__)
REQUEST_LOG = logging.getLogger("moorage.compute.requests")

# What the service token guards here, as the start-up warning names it.
AGENT_WRITES = ("the conductor's spawns, deletes, power actions and service updates "
                "(POST /guests, DELETE /guests/{uuid}, POST /guests/{uuid}/power, "
                "PUT /service)")
# A guest's body is a few KiB; anything much larger is a mistake.
MAX_BODY = 1024 * 1024


class HTTPError(Exception):
    """An answer other than success, with its message."""

    def __init__(self, status: int, message: str, headers: list[tuple[str, str]] | None = None
                 ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or []


@dataclass
class AgentRequest:
    """One request to the agent: its environ, path parameters and the agent it reaches."""

    environ: WSGIEnvironment
    agent: ComputeAgent
    params: dict[str, str] = field(default_factory=dict)

    def json(self) -> object:
        """The parsed body; HTTPError 400 or 413 naming what is wrong with it."""
        try:
            length = int(self.environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            raise HTTPError(400, "Content-Length must be an integer") from None
        if length > MAX_BODY:
            raise HTTPError(413, f"the body is {length} bytes; the limit is {MAX_BODY}")
        raw = self.environ["wsgi.input"].read(length) if length > 0 else b""
        if not raw:
            raise HTTPError(400, "a JSON body is required")
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise HTTPError(400, f"the body is not valid JSON: {exc}") from None
        problem = json_body_problem(raw, data)
        if problem is not None:
            raise HTTPError(400, problem)
        return data

    def admit(self, instance_uuid: str) -> None:
        """The call's fence (``X-Moorage-Fence``), admitted for this guest: 409
        ``fenced`` when a newer operation has been here, 400 when it is malformed."""
        text = self.environ.get("HTTP_" + wire.FENCE_HEADER.upper().replace("-", "_"))
        try:
            fence = Fence.parse(text) if text else None
        except ValueError as exc:
            raise HTTPError(400, f"{wire.FENCE_HEADER}: {exc}") from None
        if not self.agent.fences.admit(instance_uuid, fence):
            raise Refused(json_response(409, wire.fenced_to_json(instance_uuid, fence)))


class Refused(Exception):
    """An answer a handler gives from below: a call refused as its body says."""

    def __init__(self, response: Response) -> None:
        super().__init__(response.status)
        self.response = response


def json_response(status: int, body: object) -> Response:
    return Response(status, json.dumps(body).encode(), content_type=JSON)


def error_response(status: int, message: str) -> Response:
    return json_response(status, {"error": {"message": message}})


# -- handlers ----------------------------------------------------------------------------

def show_agent(req: AgentRequest) -> Response:
    agent = req.agent
    return json_response(200, {"host": agent.host, "driver": agent.driver.name,
                               "nodes": agent.driver.nodes(), "version": moorage.__version__})


def list_guests(req: AgentRequest) -> Response:
    return json_response(200, {"guests": sorted(req.agent.driver.guests())})


def spawn_guest(req: AgentRequest) -> Response:
    try:
        guest = wire.guest_from_json(req.json())
    except wire.InvalidBody as exc:
        raise HTTPError(400, str(exc)) from None
    agent = req.agent
    req.admit(guest.uuid)
    try:
        agent.driver.spawn(guest)
    except Exception as exc:  # every refusal goes back to the conductor, named
        failure = wire.spawn_failure(agent.host, exc)
        # A missing feature or a contradiction is the guest's business; anything else
        # is this host's trouble, worth its traceback.
        expected = failure.feature is not None or not failure.reschedule
        (LOG.info if expected else LOG.warning)(
            "spawn of %s on %s failed: %s: %s (reschedule: %s)", guest.uuid, guest.node,
            failure.kind, failure.message, failure.reschedule, exc_info=not expected)
        return json_response(409, wire.spawn_failed_to_json(failure))
    LOG.info("spawned %s (%s) on %s", guest.uuid, guest.name, guest.node)
    return json_response(201, {"guest": {"uuid": guest.uuid, "host": agent.host,
                                         "node": guest.node}})


def show_guest(req: AgentRequest) -> Response:
    instance_uuid = req.params["uuid"]
    req.admit(instance_uuid)
    if instance_uuid not in req.agent.driver.guests():
        raise HTTPError(404, f"no guest {instance_uuid} on {req.agent.host}")
    return json_response(200, {"guest": {"uuid": instance_uuid,
                                         "host": req.agent.host}})


def destroy_guest(req: AgentRequest) -> Response:
    instance_uuid = req.params["uuid"]
    req.admit(instance_uuid)
    req.agent.driver.destroy(instance_uuid)
    LOG.info("destroyed %s (if it was here)", instance_uuid)
    return Response(204)


def power_guest(req: AgentRequest) -> Response:
    instance_uuid = req.params["uuid"]
    try:
        action = wire.power_action_from_json(req.json())
    except wire.InvalidBody as exc:
        raise HTTPError(400, str(exc)) from None
    req.admit(instance_uuid)
    try:
        action.carry_out(req.agent.driver, instance_uuid)
    except Exception as exc:  # every failure goes back to the conductor, named
        kind = type(exc).__name__
        expected = isinstance(exc, GuestNotFound | NotImplementedError)
        (LOG.info if expected else LOG.warning)(
            "%s of %s on %s failed: %s: %s", action, instance_uuid, req.agent.host, kind,
            exc, exc_info=not expected)
        return json_response(409, wire.power_failed_to_json(kind, str(exc) or kind))
    LOG.info("%s of %s done", action, instance_uuid)
    return Response(204)


def show_console(req: AgentRequest) -> Response:
    instance_uuid = req.params["uuid"]
    try:
        output = req.agent.driver.console_output(instance_uuid)
    except GuestNotFound as exc:
        raise HTTPError(404, str(exc)) from None
    except NotImplementedError as exc:
        raise HTTPError(501, str(exc)) from None
    return json_response(200, {"console": {"output": output}})


def show_uptime(req: AgentRequest) -> Response:
    try:
        uptime = req.agent.driver.host_uptime()
    except NotImplementedError as exc:
        raise HTTPError(501, str(exc)) from None
    return json_response(200, {"uptime": uptime})


def update_service(req: AgentRequest) -> Response:
    body = req.json()
    if not (isinstance(body, dict) and set(body) == {"disabled"}
            and isinstance(body["disabled"], bool)):
        raise HTTPError(400, 'the body must be {"disabled": true|false}')
    result = req.agent.set_disabled(body["disabled"])
    if not result.ok:
        # The state is kept and the trait follows at the next sync.
        LOG.warning("service disabled=%s kept, but placement was not updated: %s",
                    body["disabled"], result.problem)
    return json_response(200, {"service": {"disabled": req.agent.disabled}})


Handler = Callable[[AgentRequest], Response]

ROUTES: dict[str, dict[str, Handler]] = {
    "/": {"GET": show_agent},
    "/guests": {"GET": list_guests, "POST": spawn_guest},
    "/guests/{uuid}": {"GET": show_guest, "DELETE": destroy_guest},
    "/guests/{uuid}/power": {"POST": power_guest},
    "/guests/{uuid}/console": {"GET": show_console},
    "/host/uptime": {"GET": show_uptime},
    "/service": {"PUT": update_service},
}


# -- the application ----------------------------------------------------------------------

def _route(router: Router[Handler], agent: ComputeAgent, environ: WSGIEnvironment,
           path: str) -> Response:
    found = router.match(path)
    if found is None:
        raise HTTPError(404, f"no such resource: {path}")
    methods, params = found
    method = environ.get("REQUEST_METHOD", "GET")
    handler = methods.get(method)
    if handler is None:
        raise HTTPError(405, f"{method} is not allowed on {path}; allowed: "
                        f"{', '.join(methods)}", [("allow", ", ".join(methods))])
    return handler(AgentRequest(environ, agent, params))


def _application(access: InternalAccess, dispatch: Callable[[WSGIEnvironment], Response]
                 ) -> WSGIApplication:
    """The WSGI application around ``dispatch``: the request's id (the conductor's
    X-OpenStack-Request-ID becomes its global id, on every line a spawn logs), the
    internal access rule (the service token), errors as JSON, a log line per request."""

    def answer(environ: WSGIEnvironment, start_response: StartResponse,
               context: request_context.RequestContext) -> list[bytes]:
        started = time.perf_counter()
        try:
            refusal = access.refusal(environ.get("REQUEST_METHOD", "GET"),
                                     environ.get("HTTP_X_SERVICE_TOKEN"))
            if refusal is not None:
                raise HTTPError(401, refusal)
            response = dispatch(environ)
        except Refused as refused:
            response = refused.response
        except HTTPError as exc:
            response = error_response(exc.status, exc.message)
            response.headers.extend(exc.headers)
        except Exception:
            LOG.exception("unexpected error serving %s %s", environ.get("REQUEST_METHOD"),
                          environ.get("PATH_INFO"))
            response = error_response(500, "an unexpected error occurred; see the agent's log")
        headers = list(response.headers)
        if response.content_type and response.status != 204:
            headers.append(("content-type", response.content_type))
        headers.append(("content-length", str(len(response.body))))
        headers.append(("x-openstack-request-id", context.request_id))
        start_response(STATUS_LINES.get(response.status, str(response.status)), headers)
        request_context.log_request(REQUEST_LOG, environ, response.status, len(response.body),
                                    time.perf_counter() - started)
        return [response.body]

    return request_context.serving(answer)


def make_app(agent: ComputeAgent, access: InternalAccess) -> WSGIApplication:
    """The WSGI application of ``agent``'s HTTP API, guarded by ``access``."""
    router: Router[Handler] = Router(ROUTES)
    return _application(access, lambda environ: _route(
        router, agent, environ, environ.get("PATH_INFO") or "/"))


FLEET_PREFIX = "/hosts/"


def make_fleet_app(agents: Mapping[str, ComputeAgent], access: InternalAccess, *,
                   silent: Container[str] = ()) -> WSGIApplication:
    """One application for the agents of many hosts: ``/hosts/{host}`` + the agent API
    of that host (so a host's agent URL is ``{fleet}/hosts/{host}``), and ``GET /``,
    what the fleet runs. A host in ``silent`` answers 503, as a dead agent would not."""
    router: Router[Handler] = Router(ROUTES)

    def dispatch(environ: WSGIEnvironment) -> Response:
        path = environ.get("PATH_INFO") or "/"
        if path in ("", "/"):
            return json_response(200, {"fleet": {"hosts": len(agents),
                                                 "version": moorage.__version__}})
        if not path.startswith(FLEET_PREFIX):
            raise HTTPError(404, f"no such resource: {path}; a host's API is under "
                            f"{FLEET_PREFIX}{{host}}")
        host, _, rest = path[len(FLEET_PREFIX):].partition("/")
        agent = agents.get(host)
        if agent is None:
            raise HTTPError(404, f"no host {host} in this fleet")
        if host in silent:
            raise HTTPError(503, f"host {host} is stopped (simulated)")
        return _route(router, agent, environ, "/" + rest)

    return _application(access, dispatch)


# -- serving ---------------------------------------------------------------------------------

class AgentHTTPServer(ThreadedServer):
    """The HTTP API of one agent, served by a thread of this process."""

    def __init__(self, agent: ComputeAgent, access: InternalAccess,
                 listen: str = "127.0.0.1", port: int = 0) -> None:
        try:
            super().__init__(make_app(agent, access), listen, port,
                             name=f"agent-http-{agent.host}")
        except OSError as exc:
            raise OSError(exc.errno, f"the agent's HTTP API cannot listen on {listen}:{port}: "
                          f"{exc.strerror or exc}") from None
        self.listen = listen
