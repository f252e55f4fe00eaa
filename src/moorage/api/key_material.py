"""What a key pair is made of, as nova makes and checks it: the fingerprint of a public
key, and a new key pair when a client asks for one (before microversion 2.92).

Why nova's fingerprints exactly: clients compare them with what they hold, ``ssh-keygen
-l -E md5`` for an ssh key (the MD5 of the key's blob) and the certificate's SHA-1
thumbprint for an x509 one (the SHA-1 of its DER encoding), both in colon hex.

Pure functions of the key text; the ``cryptography`` package parses and generates. A
text that does not parse is ``InvalidKeypair``, whose message is nova's with the parser's
reason after it. A generated private key is returned to the caller to answer once; the
API never stores it.
"""

from __future__ import annotations

import base64
import datetime
import enum
import hashlib
from dataclasses import dataclass

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

# nova's: RSA keys of 2048 bits, certificates valid ten years.
KEY_BITS = 2048
CERTIFICATE_DAYS = 3650
# The comment of a generated ssh public key (nova writes "Generated-by-Nova").
GENERATED_COMMENT = "Generated-by-Moorage"
# Microsoft's User Principal Name, the subjectAltName WinRM matches a certificate by.
_UPN = x509.ObjectIdentifier("1.3.6.1.4.1.311.20.2.3")
# The longest common name X.509 allows (RFC 5280's ub-common-name).
_COMMON_NAME_MAX = 64


class KeypairType(enum.StrEnum):
    """nova's key pair types: an OpenSSH public key, or a PEM certificate (WinRM)."""

    SSH = "ssh"
    X509 = "x509"


class InvalidKeypair(ValueError):
    """The public key given is not a key of its type (a 400 in the API)."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"Keypair data is invalid: {reason}")


@dataclass(frozen=True)
class KeyMaterial:
    """A public key and its fingerprint (stored), and the private key when it was
    generated here (answered once, never stored)."""

    public_key: str
    fingerprint: str
    private_key: str | None = None


def _colon_hex(digest: bytes) -> str:
    return ":".join(f"{byte:02x}" for byte in digest)


def ssh_fingerprint(public_key: str) -> str:
    """The MD5 of the key's blob (the base64 field of ``type blob [comment]``), once the
    text parses as an OpenSSH public key."""
    try:
        serialization.load_ssh_public_key(public_key.encode("utf-8"))
        # The fields as nova splits them (on single spaces, as the parser did).
        blob = base64.b64decode(public_key.split(" ")[1])
    except (ValueError, UnsupportedAlgorithm, IndexError) as exc:
        raise InvalidKeypair(f"failed to generate fingerprint: the public key is not an "
                             f"OpenSSH public key ({exc})") from None
    return _colon_hex(hashlib.md5(blob, usedforsecurity=False).digest())


def x509_fingerprint(certificate: str) -> str:
    """The SHA-1 of the certificate's DER encoding, once the text parses as a PEM
    certificate."""
    try:
        parsed = x509.load_pem_x509_certificate(certificate.encode("utf-8"))
        digest = parsed.fingerprint(hashes.SHA1())  # a thumbprint, not a signature
    except ValueError as exc:
        raise InvalidKeypair(
            f"failed to generate X509 fingerprint. Error message: {exc}") from None
    return _colon_hex(digest)


def fingerprint(public_key: str, kind: KeypairType) -> str:
    """The fingerprint nova answers for ``public_key`` of type ``kind``."""
    if kind is KeypairType.X509:
        return x509_fingerprint(public_key)
    return ssh_fingerprint(public_key)


def imported(public_key: str, kind: KeypairType) -> KeyMaterial:
    """A public key the caller gives, as it was given, with its fingerprint."""
    return KeyMaterial(public_key, fingerprint(public_key, kind))


def generate(kind: KeypairType, user_id: str) -> KeyMaterial:
    """A new key pair of type ``kind`` for ``user_id``: an RSA ssh key (its private key
    in PEM), or a self-signed client certificate for ``user_id`` (its private key a
    base64 PKCS#12 bundle without a password), as nova generates them."""
    if kind is KeypairType.X509:
        return _client_certificate(user_id)
    key = rsa.generate_private_key(public_exponent=65537, key_size=KEY_BITS)
    private = key.private_bytes(serialization.Encoding.PEM,
                                serialization.PrivateFormat.TraditionalOpenSSL,
                                serialization.NoEncryption()).decode("ascii")
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                           serialization.PublicFormat.OpenSSH)
    public_key = f"{public.decode('ascii')} {GENERATED_COMMENT}"
    return KeyMaterial(public_key, ssh_fingerprint(public_key), private)


def _der_utf8(text: str) -> bytes:
    """``text`` as a DER UTF8String (the value of an otherName)."""
    data = text.encode("utf-8")
    size = len(data)
    if size < 0x80:
        length = bytes([size])
    else:
        digits = size.to_bytes((size.bit_length() + 7) // 8, "big")
        length = bytes([0x80 | len(digits)]) + digits
    return b"\x0c" + length + data


def _client_certificate(user_id: str) -> KeyMaterial:
    """nova's WinRM certificate: subject CN=user_id, extended key usage clientAuth, and
    the UPN ``user_id@localhost`` in its subjectAltName."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=KEY_BITS)
    subject = x509.Name([x509.NameAttribute(
        NameOID.COMMON_NAME, user_id[:_COMMON_NAME_MAX] or "user")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject).issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now).not_valid_after(now + datetime.timedelta(days=CERTIFICATE_DAYS))
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]),
                       critical=False)
        .add_extension(x509.SubjectAlternativeName([x509.OtherName(
            _UPN, _der_utf8(f"{user_id}@localhost"))]), critical=False)
        .sign(key, hashes.SHA256()))
    pem = certificate.public_bytes(serialization.Encoding.PEM).decode("ascii")
    bundle = pkcs12.serialize_key_and_certificates(None, key, certificate, None,
                                                   serialization.NoEncryption())
    return KeyMaterial(pem, x509_fingerprint(pem), base64.b64encode(bundle).decode("ascii"))
