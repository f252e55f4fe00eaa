"""moorage.service_auth without a Keystone: when a token is renewed, how https is
verified, and the one-line refusals of a [placement] configuration that cannot work
(the Keystone side: tests/functional/test_service_credentials.py)."""

from __future__ import annotations

import ssl
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from moorage.conf import load_config
from moorage.placement.client import PlacementClient, PlacementError
from moorage.service_auth import (
    CredentialsError,
    DevelopmentToken,
    KeystoneCredentials,
    destination,
    from_conf,
    renewal_time,
    tls_context,
)

ISSUED = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)


@pytest.mark.parametrize(("life", "left"), [
    (timedelta(hours=1), 120.0),      # keystoneauth1's own margin
    (timedelta(seconds=30), 10.0),    # a third of a short life
    (timedelta(seconds=360), 120.0),  # a third would be exactly the margin
])
def test_a_token_is_renewed_before_it_expires(life: timedelta, left: float) -> None:
    expires = ISSUED + life
    assert renewal_time(ISSUED, expires, ISSUED.timestamp()) == expires.timestamp() - left


def test_a_token_without_expiry_is_never_renewed_and_a_missing_issue_time_is_now() -> None:
    assert renewal_time(ISSUED, None, 0.0) == float("inf")
    expires = ISSUED + timedelta(seconds=60)
    assert renewal_time(None, expires, ISSUED.timestamp()) == expires.timestamp() - 20


def test_tls_context_verifies_by_default_and_insecure_turns_it_off(tmp_path: Path) -> None:
    verified = tls_context(cafile=None, certfile=None, keyfile=None, insecure=False)
    assert verified.verify_mode == ssl.CERT_REQUIRED and verified.check_hostname
    loose = tls_context(cafile=None, certfile=None, keyfile=None, insecure=True)
    assert loose.verify_mode == ssl.CERT_NONE and not loose.check_hostname
    with pytest.raises(ValueError, match=r"cafile '.*missing\.pem'"):
        tls_context(cafile=str(tmp_path / "missing.pem"), certfile=None, keyfile=None,
                    insecure=False)


def test_without_auth_type_the_development_token_goes_to_endpoint_override() -> None:
    conf = load_config([], [("placement", "endpoint_override", "http://10.0.0.5:8778"),
                            ("placement", "token", "ops:admin")])
    credentials = from_conf(conf, "placement", development_url="http://127.0.0.1:8778")
    assert isinstance(credentials, DevelopmentToken)
    assert credentials.endpoint() == "http://10.0.0.5:8778"
    assert credentials.headers() == {"x-auth-token": "ops:admin"}
    assert not credentials.renew(credentials.headers())
    assert destination(conf, "placement", development_url="x") == (
        "http://10.0.0.5:8778 (DEVELOPMENT token)")
    default = load_config([])
    assert PlacementClient.from_conf(default).url == "http://127.0.0.1:8778"


def test_password_auth_takes_novas_options_from_files_and_overrides(tmp_path: Path) -> None:
    """The plugin's own options (auth_url, username...) exist once auth_type names it,
    whether it comes from a file or an override."""
    path = tmp_path / "moorage.conf"
    path.write_text("[placement]\nauth_type = password\nauth_url = http://ks:5000/v3\n"
                    "username = nova\npassword = secret\nproject_name = service\n"
                    "user_domain_id = default\nproject_domain_id = default\n"
                    "region_name = RegionTwo\n")
    conf = load_config([str(path)], [("placement", "username", "placement-user")])
    assert conf.placement.username == "placement-user"
    assert conf.placement.valid_interfaces == ["internal", "public"]
    assert conf.placement.service_type == "placement"
    credentials = from_conf(conf, "placement", development_url="x")
    assert isinstance(credentials, KeystoneCredentials)
    assert destination(conf, "placement", development_url="x") == (
        "the placement endpoint of Keystone's catalog (Keystone, auth_type password)")
    overridden = load_config([], [("placement", "auth_type", "v3applicationcredential"),
                                  ("placement", "application_credential_id", "abc"),
                                  ("placement", "application_credential_secret", "s"),
                                  ("placement", "auth_url", "http://ks:5000/v3")])
    assert isinstance(from_conf(overridden, "placement", development_url="x"),
                      KeystoneCredentials)


def test_an_unknown_plugin_is_one_line_naming_the_allowed_ones() -> None:
    with pytest.raises(ValueError, match=r"^\[placement\] auth_type = passwd: no such "
                       r"keystoneauth1 plugin; allowed: .*v3applicationcredential"):
        load_config([], [("placement", "auth_type", "passwd")])


def test_missing_plugin_options_are_one_line_naming_them() -> None:
    conf = load_config([], [("placement", "auth_type", "password")])
    with pytest.raises(CredentialsError, match=r"^\[placement\] auth_type = password "
                       r"needs auth_url"):
        from_conf(conf, "placement", development_url="x")


def test_an_unreachable_keystone_is_one_placement_error_naming_it() -> None:
    from moorage.placement.launcher import free_port  # a port nothing listens on

    auth_url = f"http://127.0.0.1:{free_port()}/v3"
    conf = load_config([], [("placement", "auth_type", "password"),
                            ("placement", "auth_url", auth_url),
                            ("placement", "username", "nova"),
                            ("placement", "password", "x"),
                            ("placement", "project_name", "service"),
                            ("placement", "user_domain_id", "default"),
                            ("placement", "project_domain_id", "default"),
                            ("placement", "endpoint_override", "http://127.0.0.1:9")])
    client = PlacementClient.from_conf(conf)
    with pytest.raises(PlacementError) as raised:
        client.providers()
    message = str(raised.value)
    assert message.startswith(f"[placement] could not get a token from {auth_url}: "
                              "not reachable"), message
    assert "\n" not in message
