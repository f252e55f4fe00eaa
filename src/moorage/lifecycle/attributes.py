"""What a server's owner said of it beyond what it runs: its description, hostname,
metadata, tags, key pair, access addresses, user data, scheduler hints...

Nova keeps these on the instance, and clients show them back. Moorage stores them as
they were given (one JSON column, ``servers.attributes``), shows them in the server's
body as each microversion does, and reads the few it acts on (the key pair, the hints)
where it acts. None of it is part of the lifecycle's state machine: no transition reads
or writes it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

# nova's hostname limit (a DNS label), and the default taken from the display name.
HOSTNAME_MAX = 63
# nova's limits on what a server carries: metadata items (its [quota] metadata_items
# default; a key and a value are at most 255 characters, the columns nova keeps them in),
# and tags (objects.instance.MAX_TAG_COUNT; a tag is at most 60 characters, with no ','
# so that a list filter can name several, and no '/' so that a URL can name one).
METADATA_ITEMS_MAX = 128
METADATA_KEY_MAX = METADATA_VALUE_MAX = 255
TAGS_MAX = 50
TAG_LENGTH_MAX = 60
TAG_FORBIDDEN = ",/"
_NOT_HOSTNAME = re.compile(r"[^a-z0-9.-]")


def hostname_from(name: str) -> str:
    """The hostname a server gets when none is asked: its name as a DNS label
    (lower case; spaces and underscores to '-'; other characters dropped; no '.' or
    '-' at either end), or "server" when nothing is left."""
    text = name.lower().replace(" ", "-").replace("_", "-")
    text = _NOT_HOSTNAME.sub("", text)[:HOSTNAME_MAX].strip(".-")
    return text or "server"


@dataclass(frozen=True)
class ServerAttributes:
    """The descriptive fields of one server, as the API stored them."""

    hostname: str = ""
    description: str | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)
    tags: tuple[str, ...] = ()
    key_name: str | None = None
    access_ipv4: str | None = None
    access_ipv6: str | None = None
    disk_config: str = "MANUAL"
    config_drive: bool = False
    user_data: str | None = None
    security_groups: tuple[str, ...] = ("default",)
    scheduler_hints: Mapping[str, Any] = field(default_factory=dict)
    trusted_image_certificates: tuple[str, ...] | None = None
    reservation_id: str = ""
    launch_index: int = 0
    # nova's lock: who took it ("owner", the server's project, or "admin", another's)
    # and why; only they (or an admin, with unlock_override) lift it.
    locked: bool = False
    locked_reason: str | None = None
    locked_by: str | None = None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["metadata"] = dict(self.metadata)
        data["scheduler_hints"] = dict(self.scheduler_hints)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ServerAttributes:
        """Read back; a key this version does not know is ignored, a missing one takes
        its default (rows written before a field existed)."""
        known = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        for name in ("tags", "security_groups"):
            if name in known:
                known[name] = tuple(known[name])
        if known.get("trusted_image_certificates") is not None:
            known["trusted_image_certificates"] = tuple(known["trusted_image_certificates"])
        return cls(**known)
