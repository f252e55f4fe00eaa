"""How a Moorage service or command authenticates to another OpenStack service (placement,
the image service, the compute API): keystoneauth1, configured by nova's options in the
service's group (conf.keystoneauth) or by a cloud of clouds.yaml (cli.cloud), or fixed
headers (the DEVELOPMENT token, Moorage's service token).

A client asks its ``Credentials`` for the endpoint once and for the headers of every
request. With Keystone:

- the endpoint is ``endpoint_override``, else the catalog's URL of the group's
  ``service_type`` for the first of ``valid_interfaces`` it has in ``region_name``;
- the token comes from keystoneauth1's plugin (password, application credential,
  token...) and is renewed before it expires: when a third of its life, and at most two
  minutes, is left (``renewal_time``), and at once when the service refuses it (401;
  ``renew``);
- https is verified with ``cafile`` (``insecure`` turns verification off) and
  ``certfile``/``keyfile`` are sent, as keystoneauth1's session would.

The requests themselves go over moorage.transport, not keystoneauth1's session
(requests): on the hot path (the scheduler's claims) the headers are a dict kept until
the renewal time, so authentication costs one clock read per request. Every failure is a
``CredentialsError`` whose text is one line naming what failed and what was tried.
"""

from __future__ import annotations

import logging
import math
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING

from oslo_config import cfg

from moorage import transport
from moorage.conf import keystoneauth

if TYPE_CHECKING:
    from keystoneauth1 import adapter, plugin, session

LOG = logging.getLogger(__name__)

# Renew a token when this share of its life, or RENEW_BEFORE seconds, is left (the less).
RENEW_SHARE = 1 / 3
# keystoneauth1's own margin (BaseIdentityPlugin.MIN_TOKEN_LIFE_SECONDS).
RENEW_BEFORE = 120.0


class CredentialsError(ValueError):
    """Authentication failed; ``str()`` is one line naming what failed and what was
    tried."""


def renewal_time(issued: datetime | None, expires: datetime | None, now: float) -> float:
    """When (a ``time.time()``) to renew a token issued at ``issued`` that expires at
    ``expires``: when RENEW_SHARE of its life, and at most RENEW_BEFORE seconds, is
    left. Never for a token without an expiry."""
    if expires is None:
        return math.inf
    end = expires.timestamp()
    life = end - (issued.timestamp() if issued is not None else now)
    return end - min(RENEW_BEFORE, max(life, 0.0) * RENEW_SHARE)


def tls_context(*, cafile: str | None, certfile: str | None, keyfile: str | None,
                insecure: bool) -> ssl.SSLContext:
    """How an https endpoint is verified, as keystoneauth1's session options say:
    ``cafile``'s authorities (else the system's), none at all when ``insecure``, and this
    side's certificate when ``certfile`` is given. ValueError (one line) for a file that
    cannot be read."""
    try:
        context = ssl.create_default_context(cafile=cafile or None)
        if insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if certfile:
            context.load_cert_chain(certfile, keyfile or None)
    except (OSError, ssl.SSLError) as exc:
        raise ValueError(f"cafile {cafile!r}, certfile {certfile!r}: {exc}") from None
    return context


class Credentials:
    """An endpoint, the headers each request carries, and how https is verified."""

    def endpoint(self) -> str:
        raise NotImplementedError

    def headers(self) -> Mapping[str, str]:
        raise NotImplementedError

    def renew(self, refused: Mapping[str, str]) -> bool:
        """The service answered 401 to a request that carried ``refused``: True when
        the caller should send it once more with ``headers()`` (a newer token)."""
        return False

    def tls(self) -> ssl.SSLContext | None:
        return None

    def timeout(self) -> float | None:
        """The configured timeout of a request in seconds; None: the client's own."""
        return None


class StaticHeaders(Credentials):
    """Fixed headers to one URL: Moorage's service token to its own image service, or
    none at all."""

    def __init__(self, url: str, headers: Mapping[str, str]) -> None:
        self._url = url
        self._headers = {name.lower(): value for name, value in headers.items()}

    def endpoint(self) -> str:
        return self._url

    def headers(self) -> Mapping[str, str]:
        return self._headers


class DevelopmentToken(StaticHeaders):
    """DEVELOPMENT ONLY: one fixed token to one URL (a noauth2 service's
    "user[:project]" token, or a token an operator got by hand)."""

    def __init__(self, url: str, token: str) -> None:
        super().__init__(url, {"x-auth-token": token})


class AtURL(Credentials):
    """``credentials``' tokens and https settings, sent to ``url`` instead of the
    endpoint they name (``[glance] api_servers`` with Keystone's tokens)."""

    def __init__(self, credentials: Credentials, url: str) -> None:
        self._credentials = credentials
        self._url = url

    def endpoint(self) -> str:
        return self._url

    def headers(self) -> Mapping[str, str]:
        return self._credentials.headers()

    def renew(self, refused: Mapping[str, str]) -> bool:
        return self._credentials.renew(refused)

    def tls(self) -> ssl.SSLContext | None:
        return self._credentials.tls()

    def timeout(self) -> float | None:
        return self._credentials.timeout()


class KeystoneToken:
    """A keystoneauth1 plugin's tokens, renewed before they expire; ``label`` names where
    they were configured, for messages (``[placement]``, ``cloud 'prod'``). One serves
    the credentials of every service a configuration reaches (a command's compute API
    and image service, the twin's three services): one token, not one per service.
    Thread-safe: one renewal at a time."""

    def __init__(self, label: str, auth: plugin.BaseAuthPlugin,
                 session: session.Session) -> None:
        self.label = label
        self.auth = auth
        self.session = session
        self._lock = threading.Lock()
        self._headers: Mapping[str, str] = {}
        self._renew_at = -math.inf

    def headers(self) -> Mapping[str, str]:
        if time.time() < self._renew_at:
            return self._headers
        with self._lock:
            if time.time() >= self._renew_at:
                self._fetch()
            return self._headers

    def renew(self, refused: Mapping[str, str]) -> bool:
        with self._lock:
            if self._headers is not refused:
                return True  # another thread renewed it meanwhile
            self._fetch()
            return True

    def _fetch(self) -> None:
        """A new token (the plugin's cached one is dropped first), and when to renew it."""
        self.auth.invalidate()
        try:
            headers = self.session.get_auth_headers(self.auth) or {}
        except Exception as exc:  # keystoneauth1's, and its plain Exception for a
            # plugin missing an option ("password is a required attribute")
            LOG.debug("authentication failed", exc_info=True)
            raise CredentialsError(self.failure(exc, "could not get a token")) from None
        reference = getattr(self.auth, "auth_ref", None)
        self._headers = {name.lower(): value for name, value in headers.items()}
        self._renew_at = renewal_time(getattr(reference, "issued", None),
                                      getattr(reference, "expires", None), time.time())

    def failure(self, exc: Exception, what: str) -> str:
        """The one line of a failed exchange with Keystone."""
        from keystoneauth1 import exceptions

        where = getattr(self.auth, "auth_url", None) or "Keystone"
        if isinstance(exc, exceptions.Unauthorized):
            reason = "the credentials were refused (401): check username, password, " \
                "application credential and their domains"
        elif isinstance(exc, exceptions.SSLError):
            reason = f"TLS failed: {_first_line(exc)} (cafile, insecure)"
        elif isinstance(exc, exceptions.ConnectFailure | exceptions.ConnectTimeout):
            reason = f"not reachable ({_connect_problem(exc)})"
        else:
            reason = _first_line(exc)
        return f"{self.label} {what} from {where}: {reason}"


class KeystoneCredentials(Credentials):
    """One service reached with a ``KeystoneToken``: its endpoint from the catalog as
    ``adapter`` says (service type, interfaces, region, override)."""

    def __init__(self, token: KeystoneToken, adapter: adapter.Adapter, *,
                 tls: ssl.SSLContext | None, timeout: float | None) -> None:
        self.token = token
        self._adapter = adapter
        self._tls = tls
        self._timeout = timeout
        self._lock = threading.Lock()
        self._endpoint: str | None = None

    @property
    def label(self) -> str:
        return self.token.label

    def endpoint(self) -> str:
        if self._endpoint is None:
            with self._lock:
                if self._endpoint is None:
                    self._endpoint = self._find_endpoint()
        return self._endpoint

    def headers(self) -> Mapping[str, str]:
        return self.token.headers()

    def renew(self, refused: Mapping[str, str]) -> bool:
        return self.token.renew(refused)

    def tls(self) -> ssl.SSLContext | None:
        return self._tls

    def timeout(self) -> float | None:
        return self._timeout

    def _find_endpoint(self) -> str:
        from keystoneauth1 import exceptions

        adapter = self._adapter
        self.token.headers()  # the catalog comes with a token: a refusal says so first
        try:
            url = adapter.get_endpoint()
        except exceptions.EndpointNotFound:
            url = None
        except exceptions.ClientException as exc:
            raise CredentialsError(self.token.failure(exc, "could not read the catalog")
                                   ) from None
        if not url:
            interfaces = adapter.interface if isinstance(adapter.interface, list) else [
                adapter.interface]
            raise CredentialsError(
                f"{self.label}: Keystone's catalog has no endpoint of service type "
                f"{adapter.service_type!r} with interface {' or '.join(map(str, interfaces))}"
                f"{f' in region {adapter.region_name!r}' if adapter.region_name else ''}; "
                "register one, or name the endpoint (endpoint_override; a command's "
                "--os-*-url)")
        return str(url)


# What a failed connection's long text (requests', then urllib3's) comes down to.
_CONNECT_PROBLEMS = ("Connection refused", "timed out", "Name or service not known",
                     "Temporary failure in name resolution", "No route to host",
                     "Network is unreachable", "Connection reset")


def _connect_problem(exc: BaseException) -> str:
    text = str(exc)
    for problem in _CONNECT_PROBLEMS:
        if problem.lower() in text.lower():
            return problem.lower()
    return _first_line(exc)[:160]


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class Endpoint:
    """A service reached with ``credentials``: the connections (made at the first
    request, to the endpoint the credentials name, as ``root`` reads it), the
    credentials' headers on every request, and a request the service refused with 401
    sent once more when the credentials have a newer token. Thread-safe."""

    def __init__(self, credentials: Credentials, *, timeout: float, maxsize: int,
                 root: Callable[[str], str] = lambda url: url.rstrip("/")) -> None:
        self.credentials = credentials
        self.timeout = credentials.timeout() or timeout
        self._maxsize = maxsize
        self._root = root
        self._server: transport.Server | None = None
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        """The service's endpoint (the catalog asked the first time): CredentialsError
        when it cannot be found, ValueError when it is not an http(s) URL."""
        return self.server().url

    def server(self) -> transport.Server:
        server = self._server
        if server is None:
            with self._lock:
                if self._server is None:
                    url = self._root(self.credentials.endpoint())
                    self._server = transport.Server(url, timeout=self.timeout,
                                                    maxsize=self._maxsize,
                                                    tls=self.credentials.tls())
                server = self._server
        return server

    def request(self, method: str, path: str, *, body: bytes | None,
                headers: Mapping[str, str], resend: bool) -> transport.Reply:
        """``transport.Server.request`` with the credentials' headers added
        (CredentialsError, TransportError)."""
        server = self._server or self.server()
        auth = self.credentials.headers()
        reply = server.request(method, path, body=body, headers={**headers, **auth},
                               resend=resend)
        if reply.status == 401 and self.credentials.renew(auth):
            reply = server.request(method, path, body=body,
                                   headers={**headers, **self.credentials.headers()},
                                   resend=resend)
        return reply

    def download(self, path: str, write: Callable[[bytes], object], *,
                 headers: Mapping[str, str]) -> transport.Reply:
        """``transport.Server.download`` with the credentials' headers added; a 401
        (read whole, nothing written) is tried once more with a newer token."""
        server = self._server or self.server()
        auth = self.credentials.headers()
        reply = server.download(path, write, headers={**headers, **auth})
        if reply.status == 401 and self.credentials.renew(auth):
            reply = server.download(path, write,
                                    headers={**headers, **self.credentials.headers()})
        return reply


def destination(conf: cfg.ConfigOpts, group: str, *, development_url: str) -> str:
    """Where ``[group]`` sends requests, for a start-up line, without asking Keystone:
    ``endpoint_override``, else the catalog's endpoint of its service type; with the way
    of authenticating."""
    options = conf[group]
    if not options.auth_type:
        return f"{options.endpoint_override or development_url} (DEVELOPMENT token)"
    where = options.endpoint_override or (
        f"the {options.service_type} endpoint of Keystone's catalog")
    return f"{where} (Keystone, auth_type {options.auth_type})"


def from_conf(conf: cfg.ConfigOpts, group: str, *, development_url: str) -> Credentials:
    """The credentials ``[group]`` configures: keystoneauth1's when ``auth_type`` is set,
    else the DEVELOPMENT token of ``[group] token`` to ``endpoint_override`` (or
    ``development_url``). CredentialsError (one line) for an incomplete or unusable
    configuration; nothing is asked of Keystone until the first request."""
    options = conf[group]
    if not options.auth_type:
        return DevelopmentToken(options.endpoint_override or development_url, options.token)
    from keystoneauth1 import exceptions
    from keystoneauth1 import loading as ks_loading

    try:
        keystoneauth.register_plugin_options(conf, group)  # an unknown plugin: one line
        auth = ks_loading.load_auth_from_conf_options(conf, group)
        session = ks_loading.load_session_from_conf_options(conf, group, auth=auth)
        adapter = ks_loading.load_adapter_from_conf_options(conf, group, session=session,
                                                            auth=auth)
    except ValueError as exc:
        raise CredentialsError(str(exc)) from None
    except exceptions.MissingRequiredOptions as exc:
        missing = ", ".join(opt.dest for opt in exc.options)
        raise CredentialsError(f"[{group}] auth_type = {options.auth_type} needs {missing}"
                               ) from None
    except exceptions.ClientException as exc:
        raise CredentialsError(f"[{group}]: {_first_line(exc)}") from None
    if auth is None:  # auth_type is set, so keystoneauth1 loaded a plugin or raised
        raise CredentialsError(f"[{group}] auth_type = {options.auth_type}: not loaded")
    try:
        tls = tls_context(cafile=options.cafile, certfile=options.certfile,
                          keyfile=options.keyfile, insecure=options.insecure)
    except ValueError as exc:
        raise CredentialsError(f"[{group}] {exc}") from None
    return KeystoneCredentials(KeystoneToken(f"[{group}]", auth, session), adapter, tls=tls,
                               timeout=options.timeout)
