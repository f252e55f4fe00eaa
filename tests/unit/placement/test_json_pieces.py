"""JSONPieces: joined or chunked, a document is the same bytes with the length it claims."""

from __future__ import annotations

import tracemalloc

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from moorage.placement import http
from moorage.placement.http import JSONPieces, json_fragment

pieces = st.binary(max_size=40)
listings = st.tuples(
    st.lists(pieces, max_size=60),
    st.sampled_from([b",", b"", b", "]),
    st.one_of(st.none(), st.lists(pieces, min_size=1, max_size=4)),
)
parts = st.lists(st.one_of(pieces, listings), max_size=6)


def written_out(document: list[bytes | tuple[list[bytes], bytes, list[bytes] | None]]) -> bytes:
    """The document the plain way: every item rendered, every listing joined."""
    out = b""
    for part in document:
        if isinstance(part, bytes):
            out += part
        else:
            items, separator, template = part
            if template is not None:
                items = [fill.join(template) for fill in items]
            out += separator.join(items)
    return out


@given(parts, st.integers(1, 300))
def test_join_and_chunks_give_the_document_and_its_length(
    document: list[bytes | tuple[list[bytes], bytes, list[bytes] | None]], chunk_bytes: int
) -> None:
    body = JSONPieces()
    for part in document:
        if isinstance(part, bytes):
            body.add(part)
        else:
            items, separator, template = part
            body.listing(items, separator=separator, template=template)
    expected = written_out(document)
    assert body.join() == expected
    assert body.length == len(expected)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(http, "CHUNK_BYTES", chunk_bytes)
        chunks = list(body.chunks())
    assert b"".join(chunks) == expected
    # Every chunk but the last is at least the chunk size: small pieces are coalesced.
    assert all(len(chunk) >= chunk_bytes for chunk in chunks[:-1])


def test_an_empty_listing_adds_nothing() -> None:
    body = JSONPieces(b'{"resource_providers":[').listing([]).add(b"]}")
    assert body.join() == b'{"resource_providers":[]}'
    assert list(body.chunks()) == [b'{"resource_providers":[]}']
    assert body.length == len(body.join())


def test_a_fragment_is_held_in_a_buffer_of_its_own_size() -> None:
    uuid = "6f1d5a0e-0c5e-4b35-9a7d-1f0a2b3c4d5e"
    assert json_fragment(uuid) == orjson.dumps(uuid)
    tracemalloc.start()
    try:
        kept = [json_fragment(uuid) for _ in range(1000)]
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # 38 bytes of JSON and a bytes header each (orjson's own buffer is 4 KB or more).
    assert held < 1000 * 200, f"{held / len(kept):.0f} bytes per fragment"
