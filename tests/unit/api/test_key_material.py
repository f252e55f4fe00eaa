"""Key pair fingerprints as nova computes them, and the keys Moorage generates.

The expected fingerprints are not computed here: they are what ``ssh-keygen -l -E md5``
and ``openssl x509 -fingerprint -sha1`` printed for the keys of tests/keys.py when it
was written, so the test holds the code to the tools clients compare with."""

from __future__ import annotations

import base64

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from moorage.api.key_material import (
    GENERATED_COMMENT,
    InvalidKeypair,
    KeypairType,
    fingerprint,
    generate,
    imported,
)
from tests.keys import (
    CERTIFICATE,
    CERTIFICATE_FINGERPRINT,
    ECDSA,
    ECDSA_FINGERPRINT,
    ED25519,
    ED25519_FINGERPRINT,
    RSA_1024,
    RSA_1024_FINGERPRINT,
)


@pytest.mark.parametrize(("public_key", "kind", "expected"), [
    (ED25519, KeypairType.SSH, ED25519_FINGERPRINT),
    (RSA_1024, KeypairType.SSH, RSA_1024_FINGERPRINT),
    (ECDSA, KeypairType.SSH, ECDSA_FINGERPRINT),
    # The comment and a trailing newline (a pasted .pub file) change nothing.
    (ED25519.replace("alice@example", "other") + "\n", KeypairType.SSH,
     ED25519_FINGERPRINT),
    (CERTIFICATE, KeypairType.X509, CERTIFICATE_FINGERPRINT),
])
def test_fingerprints_are_what_the_tools_print(public_key: str, kind: KeypairType,
                                               expected: str) -> None:
    assert fingerprint(public_key, kind) == expected
    assert imported(public_key, kind).public_key == public_key  # stored as given


@pytest.mark.parametrize(("public_key", "kind", "words"), [
    ("not a key", KeypairType.SSH, ["failed to generate fingerprint", "not an OpenSSH",
                                    "Unsupported key type"]),
    ("ssh-rsa", KeypairType.SSH, ["failed to generate fingerprint"]),
    ("", KeypairType.SSH, ["failed to generate fingerprint"]),
    (ED25519.replace("AAAAC3", "AAAAD3"), KeypairType.SSH, ["not an OpenSSH"]),
    # The declared type and the blob's differ.
    (ED25519.replace("ssh-ed25519", "ssh-rsa"), KeypairType.SSH, ["not an OpenSSH"]),
    (ED25519, KeypairType.X509, ["failed to generate X509 fingerprint"]),
    (CERTIFICATE, KeypairType.SSH, ["failed to generate fingerprint"]),
    (CERTIFICATE.replace("MIIBhDCC", "MIIBhDCD"), KeypairType.X509,
     ["X509 fingerprint. Error message:"]),
])
def test_what_is_not_a_key_of_its_type_is_refused_saying_why(
        public_key: str, kind: KeypairType, words: list[str]) -> None:
    with pytest.raises(InvalidKeypair) as raised:
        fingerprint(public_key, kind)
    message = str(raised.value)
    assert message.startswith("Keypair data is invalid: "), message
    for word in words:
        assert word in message, message


def test_a_generated_ssh_key_pair_is_an_rsa_key_and_its_public_half() -> None:
    made = generate(KeypairType.SSH, "alice")
    assert made.public_key.startswith("ssh-rsa ")
    assert made.public_key.endswith(" " + GENERATED_COMMENT)
    assert made.private_key is not None
    assert made.private_key.startswith("-----BEGIN RSA PRIVATE KEY-----")
    private = serialization.load_pem_private_key(made.private_key.encode(), None)
    public = private.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                               serialization.PublicFormat.OpenSSH).decode()
    assert made.public_key == f"{public} {GENERATED_COMMENT}"
    assert made.fingerprint == fingerprint(made.public_key, KeypairType.SSH)


def test_a_generated_x509_key_pair_is_a_client_certificate_for_the_user() -> None:
    made = generate(KeypairType.X509, "alice")
    certificate = x509.load_pem_x509_certificate(made.public_key.encode())
    assert certificate.subject.rfc4514_string() == "CN=alice"
    usage = certificate.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]
    names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    upn = names.value.get_values_for_type(x509.OtherName)[0]
    assert upn.value == b"\x0c\x0falice@localhost"  # a DER UTF8String
    assert made.private_key is not None
    key, bundled, _ = pkcs12.load_key_and_certificates(base64.b64decode(made.private_key),
                                                       None)
    assert bundled == certificate and key is not None
    assert made.fingerprint == fingerprint(made.public_key, KeypairType.X509)


def test_a_long_user_id_still_gets_a_certificate() -> None:
    user_id = "u" * 255  # longer than a common name may be
    made = generate(KeypairType.X509, user_id)
    certificate = x509.load_pem_x509_certificate(made.public_key.encode())
    names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    value = names.value.get_values_for_type(x509.OtherName)[0].value
    assert value.endswith(f"{user_id}@localhost".encode())  # a long-form DER length
