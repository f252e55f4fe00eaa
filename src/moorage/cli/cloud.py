"""The options of every OpenStack CLI, on the ``moorage`` command itself: ``--os-cloud``
(a cloud of ``clouds.yaml``), the ``OS_*`` variables and their ``--os-*`` flags,
``--os-cacert``, ``--insecure``; read with openstacksdk's loader, as ``openstack`` reads
them. A command's endpoints then come from Keystone's catalog by service type and
interface, and its tokens from Keystone (moorage.service_auth, renewed before they
expire).

Without a cloud (no ``--os-cloud``/``OS_CLOUD``, no ``--os-auth-url``/``OS_AUTH_URL``),
or when a command is given a token by hand (``--os-token``), it uses the DEVELOPMENT
way: that token (else ``admin``, which only a noauth2 service takes) to the URL given
(``--os-compute-url``, ``--os-placement-url``), else to 127.0.0.1. A URL given with a
cloud overrides the catalog's.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from moorage import service_auth

if TYPE_CHECKING:
    from openstack.config.cloud_region import CloudRegion
    from openstack.config.loader import OpenStackConfig

# (flag, environment variable, help): openstackclient's names and variables.
_STRINGS = (
    ("--os-auth-type", "OS_AUTH_TYPE", "keystoneauth1 plugin (password, "
     "v3applicationcredential, token...; default password)"),
    ("--os-auth-url", "OS_AUTH_URL", "Keystone's URL"),
    ("--os-username", "OS_USERNAME", "user name"),
    ("--os-user-id", "OS_USER_ID", "user id"),
    ("--os-password", "OS_PASSWORD", "password"),
    ("--os-project-name", "OS_PROJECT_NAME", "project name"),
    ("--os-project-id", "OS_PROJECT_ID", "project id"),
    ("--os-user-domain-name", "OS_USER_DOMAIN_NAME", "the user's domain, by name"),
    ("--os-user-domain-id", "OS_USER_DOMAIN_ID", "the user's domain, by id"),
    ("--os-project-domain-name", "OS_PROJECT_DOMAIN_NAME", "the project's domain, by name"),
    ("--os-project-domain-id", "OS_PROJECT_DOMAIN_ID", "the project's domain, by id"),
    ("--os-application-credential-id", "OS_APPLICATION_CREDENTIAL_ID",
     "application credential id (auth type v3applicationcredential)"),
    ("--os-application-credential-secret", "OS_APPLICATION_CREDENTIAL_SECRET",
     "application credential secret"),
    ("--os-region-name", "OS_REGION_NAME", "region of the endpoints"),
    ("--os-interface", "OS_INTERFACE", "endpoint interface: public (default), internal, "
     "admin"),
    ("--os-cacert", "OS_CACERT", "certificate authorities to verify https with"),
    ("--os-cert", "OS_CERT", "client certificate"),
    ("--os-key", "OS_KEY", "client certificate's key"),
)


def add_cloud_arguments(parser: argparse.ArgumentParser) -> None:
    """The global options of the ``moorage`` command (before the command's name, or
    anywhere, as openstackclient's). Their defaults are left unset: openstacksdk reads
    clouds.yaml and the ``OS_*`` variables itself, and an option given wins."""
    group = parser.add_argument_group(
        "OpenStack cloud (clouds.yaml, OS_* variables; as the openstack CLI)")
    group.add_argument("--os-cloud", metavar="NAME", default=None,
                       help="a cloud of clouds.yaml (env OS_CLOUD)")
    for flag, variable, text in _STRINGS:
        group.add_argument(flag, metavar=flag.removeprefix("--os-").upper().replace("-", "_"),
                           default=None, help=f"{text} (env {variable})")
    group.add_argument("--insecure", action="store_const", const=True, default=None,
                       help="do not verify https certificates (DEVELOPMENT ONLY)")


def chosen(options: argparse.Namespace) -> bool:
    """Whether a cloud is named: ``--os-cloud``/``OS_CLOUD``, or Keystone's URL."""
    return bool(getattr(options, "os_cloud", None) or os.environ.get("OS_CLOUD")
                or getattr(options, "os_auth_url", None) or os.environ.get("OS_AUTH_URL"))


def credentials(options: argparse.Namespace, service_type: str, *, url: str | None,
                token: str | None, development_url: str,
                development_token: str) -> service_auth.Credentials:
    """How a command reaches ``service_type``: Keystone's, when a cloud is named and no
    token was given by hand (``url``, if given, instead of the catalog's endpoint);
    else the DEVELOPMENT token to ``url``. ValueError (one line) for a cloud that
    cannot be used."""
    if development(options, token):
        return service_auth.DevelopmentToken(url or development_url,
                                             token or development_token)
    return keystone_credentials(options, {service_type: url})[service_type]


def development(options: argparse.Namespace, token: str | None) -> bool:
    """Whether a command goes the DEVELOPMENT way: a token given by hand, or no cloud."""
    return bool(token) or not chosen(options)


def keystone_credentials(options: argparse.Namespace, endpoints: Mapping[str, str | None]
                         ) -> dict[str, service_auth.KeystoneCredentials]:
    """Keystone's credentials for each service type of ``endpoints`` (with its endpoint
    given by hand, or None: the catalog's) in the cloud ``options`` name: the cloud
    read once, one token for all of them."""
    region = load_cloud(options)
    found: dict[str, service_auth.KeystoneCredentials] = {}
    token: service_auth.KeystoneToken | None = None
    for service_type, url in endpoints.items():
        found[service_type] = cloud_credentials(region, service_type, endpoint_override=url,
                                                token=token)
        token = found[service_type].token
    return found


def _names(options: argparse.Namespace) -> argparse.Namespace:
    """The cloud options alone, as openstacksdk takes them (unset ones left out)."""
    names = ["os_cloud", *(flag.removeprefix("--").replace("-", "_")
                           for flag, _, _ in _STRINGS), "insecure"]
    return argparse.Namespace(**{name: getattr(options, name, None) for name in names})


def load_cloud(options: argparse.Namespace) -> CloudRegion:
    """openstacksdk's view of the cloud: clouds.yaml's entry (``--os-cloud``), the
    ``OS_*`` variables and the flags, merged as openstackclient merges them.
    ValueError (one line): an unknown cloud, a missing option, a broken clouds.yaml."""
    from keystoneauth1 import exceptions as ksa_exceptions
    from openstack.config import exceptions, loader

    name = getattr(options, "os_cloud", None) or os.environ.get("OS_CLOUD")
    try:
        config = loader.OpenStackConfig()
    except exceptions.OpenStackConfigException as exc:
        raise ValueError(f"clouds.yaml: {_one_line(exc)}") from None
    try:
        return config.get_one(cloud=name, argparse=_names(options))
    except exceptions.OpenStackConfigException as exc:
        if name and name not in config.get_cloud_names():
            raise ValueError(_unknown(name, config)) from None
        raise ValueError(f"{_label(name)}: {_one_line(exc)}") from None
    except ksa_exceptions.MissingRequiredOptions as exc:
        missing = ", ".join(f"--os-{opt.name} (OS_{opt.dest.upper()})"
                            for opt in exc.options)
        raise ValueError(f"{_label(name)}: missing {missing}") from None
    except ksa_exceptions.ClientException as exc:
        raise ValueError(f"{_label(name)}: {_one_line(exc)}") from None


def _label(name: str | None) -> str:
    """How messages name the cloud: clouds.yaml's name, or the variables."""
    return f"cloud {name!r}" if name and name != "envvars" else "the OS_* variables"


def _unknown(name: str, config: OpenStackConfig) -> str:
    """An unknown cloud's line: the clouds.yaml read and the clouds in it, or where
    none was found."""
    found = config.config_filename
    if not found:
        places = dict.fromkeys(str(Path(path).parent) for path in config._config_files)
        return (f"cloud {name!r}: no clouds.yaml found (looked in {', '.join(places)}; "
                "OS_CLIENT_CONFIG_FILE names another)")
    known = sorted(set(config.get_cloud_names()) - {"defaults", "envvars"})
    return f"cloud {name!r} is not in {found} (clouds there: {', '.join(known) or 'none'})"


def cloud_credentials(cloud: CloudRegion, service_type: str, *,
                      endpoint_override: str | None = None,
                      token: service_auth.KeystoneToken | None = None
                      ) -> service_auth.KeystoneCredentials:
    """Keystone's credentials for ``service_type`` of ``cloud``: its session (token,
    https verification), and its endpoint from the catalog for the cloud's interface
    and region, unless ``endpoint_override`` (or the cloud's own override) names it.
    ``token``: the token of another service's credentials of the same cloud, shared."""
    from keystoneauth1 import adapter

    session = cloud.get_session()
    auth = cloud.get_auth()
    if auth is None:  # load_cloud validates, so openstacksdk made a plugin or raised
        raise ValueError(f"cloud {cloud.name!r}: no auth plugin")
    found = adapter.Adapter(
        session, auth=auth, service_type=service_type,
        interface=cloud.get_interface(service_type),
        region_name=cloud.get_region_name(service_type),
        endpoint_override=endpoint_override or cloud.get_endpoint(service_type))
    verify, cert = cloud.get_requests_verify_args()
    certfile, keyfile = (cert if isinstance(cert, tuple) else (cert, None))
    label = _label(cloud.name)
    try:
        tls = service_auth.tls_context(
            cafile=verify if isinstance(verify, str) else None, certfile=certfile,
            keyfile=keyfile, insecure=verify is False)
    except ValueError as exc:
        raise ValueError(f"{label}: {exc}") from None
    return service_auth.KeystoneCredentials(
        token or service_auth.KeystoneToken(label, auth, session), found, tls=tls,
        timeout=cloud.config.get("api_timeout"))


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__
