"""Glance v2's members of a shared image: the projects it is shared with, each pending,
accepted or rejected. The owner adds and removes them; a member answers for itself and
sees only its own membership; only shared images have members.

    GET    /v2/images/{id}/members              {"members": [...], "schema"}
    POST   /v2/images/{id}/members              {"member": PROJECT} -> the member (200)
    GET    /v2/images/{id}/members/{member_id}
    PUT    /v2/images/{id}/members/{member_id}  {"status": "accepted"}
    DELETE /v2/images/{id}/members/{member_id}
"""

from __future__ import annotations

from moorage.image import store
from moorage.image.common import visible_image
from moorage.image.errors import BadRequest, Conflict, Forbidden, NotFound
from moorage.image.http import Answer, ImageRequest, json_response, no_content
from moorage.image.records import Member, MemberStatus, StoredImage, Visibility
from moorage.image.views import member_view

MAX_MEMBER = 255


def _shared_image(req: ImageRequest) -> StoredImage:
    image = visible_image(req)
    if image.visibility is not Visibility.SHARED:
        raise Forbidden(f"Only shared images have members; image {image.id} is "
                        f"{image.visibility.value}.")
    return image


def _owns(req: ImageRequest, image: StoredImage) -> bool:
    return req.caller.is_admin or (req.caller.project_id is not None
                                   and image.owner == req.caller.project_id)


def _member(req: ImageRequest, image: StoredImage) -> Member:
    """The member ``{member_id}``, if the caller may see it (the owner, or itself)."""
    member_id = req.params["member_id"]
    with req.service.database.reader() as conn:
        member = store.member_of(conn, image.id, member_id)
    if member is None or not (_owns(req, image) or member_id == req.caller.project_id):
        raise NotFound(f"{member_id} is not a member of image {image.id}.")
    return member


def list_members(req: ImageRequest) -> Answer:
    image = _shared_image(req)
    req.authorize("get_members", owner=image.owner)
    with req.service.database.reader() as conn:
        members = store.members(conn, image.id)
    if not _owns(req, image):
        members = [m for m in members if m.member == req.caller.project_id]
    return json_response({"members": [member_view(m) for m in members],
                          "schema": "/v2/schemas/members"})


def add_member(req: ImageRequest) -> Answer:
    image = _shared_image(req)
    req.authorize("add_member", owner=image.owner)
    body = req.json_object()
    member_id = body.get("member")
    if not isinstance(member_id, str) or not 0 < len(member_id) <= MAX_MEMBER:
        raise BadRequest(f"Invalid value for member: {member_id!r}; allowed: a project "
                         f"id of 1 to {MAX_MEMBER} characters.")
    with req.service.database.writer() as writer:
        if store.member_of(writer.conn, image.id, member_id) is not None:
            raise Conflict(f"Member {member_id} already associated with image {image.id}.")
        member = store.add_member(writer.conn, image.id, member_id, req.service.changed)
    return json_response(member_view(member))


def show_member(req: ImageRequest) -> Answer:
    image = _shared_image(req)
    req.authorize("get_member", owner=image.owner)
    return json_response(member_view(_member(req, image)))


def update_member(req: ImageRequest) -> Answer:
    image = _shared_image(req)
    member = _member(req, image)
    req.authorize("modify_member", owner=image.owner, member_id=member.member)
    status = req.json_object().get("status")
    if status not in tuple(MemberStatus):
        raise BadRequest(f"Invalid value for status: {status!r}; allowed: "
                         f"{', '.join(MemberStatus)}.")
    with req.service.database.writer() as writer:
        updated = store.set_member_status(writer.conn, image.id, member.member,
                                          MemberStatus(str(status)), req.service.changed)
    if updated is None:
        raise NotFound(f"{member.member} is not a member of image {image.id}.")
    return json_response(member_view(updated))


def delete_member(req: ImageRequest) -> Answer:
    image = _shared_image(req)
    member = _member(req, image)
    req.authorize("delete_member", owner=image.owner)
    with req.service.database.writer() as writer:
        store.remove_member(writer.conn, image.id, member.member, req.service.changed)
    return no_content()
