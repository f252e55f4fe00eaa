"""Microversions: ``OpenStack-API-Version: placement X.Y`` negotiation.

No header means the minimum version (1.0); ``latest`` means the maximum (1.39).
A malformed value is a 400, a well-formed but unsupported one a 406.
"""

from __future__ import annotations

from typing import NamedTuple

SERVICE_TYPE = "placement"
HEADER = "openstack-api-version"
_ENVIRON_HEADER = "HTTP_OPENSTACK_API_VERSION"

MIN_MINOR = 0
MAX_MINOR = 39


class Version(NamedTuple):
    """A requested microversion; tuples compare, so ``req.version >= (1, 12)`` works."""

    major: int
    minor: int

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"


MIN_VERSION = Version(1, MIN_MINOR)
MAX_VERSION = Version(1, MAX_MINOR)
VERSIONS = tuple(Version(1, minor) for minor in range(MIN_MINOR, MAX_MINOR + 1))


class MicroversionError(Exception):
    """The version header is malformed (400) or asks for an unsupported version (406)."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


def parse(value: str) -> Version:
    """Parse "X.Y" (or "latest") into a supported Version."""
    value = value.strip()
    if value == "latest":
        return MAX_VERSION
    try:
        major_s, minor_s = value.split(".", 1)
        if not all(part.isascii() and part.isdigit() for part in (major_s, minor_s)):
            # int() takes "٣" (Arabic-Indic three) and "+1": a version is ASCII digits only.
            raise ValueError("a version is two numbers of the digits 0-9")
        version = Version(int(major_s), int(minor_s))
    except ValueError as exc:
        raise MicroversionError(
            400, f"Invalid microversion: invalid version string: {value}; {exc}"
        ) from None
    if version not in VERSIONS:
        raise MicroversionError(406, f"Invalid microversion: Unacceptable version header: {value}")
    return version


def from_environ(environ: dict[str, object]) -> Version:
    """The version a WSGI request asks for, following the OpenStack header rules.

    The header may carry several services (``placement 1.2, compute 2.1``);
    the last entry for placement wins.
    """
    header = environ.get(_ENVIRON_HEADER)
    if not isinstance(header, str):
        return MIN_VERSION
    if not header.strip():
        # A value with bytes beyond ASCII (digits such as "٣" sent raw) reaches the
        # application empty under Granian: refused, not read as no header (1.0).
        raise MicroversionError(
            400, "Invalid microversion: the OpenStack-API-Version header is empty or not "
                 "ASCII; send 'placement X.Y' or 'placement latest'")
    for entry in reversed(header.split(",")):
        parts = entry.strip().split(None, 1)
        if len(parts) == 2 and parts[0].lower() == SERVICE_TYPE:
            return parse(parts[1])
    return MIN_VERSION
