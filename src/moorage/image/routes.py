"""The image service's route table: URL (below its mount point, ``/image``) ->
{method: handler}. Glance v2's paths."""

from __future__ import annotations

from moorage.image import actions, discovery, images, members, transfer
from moorage.image.http import Handler

# Answered without authentication.
PUBLIC = frozenset({"/", "/versions"})

ROUTES: dict[str, dict[str, Handler]] = {
    "/": {"GET": discovery.root},
    "/versions": {"GET": discovery.versions},
    "/v2/schemas/{name}": {"GET": discovery.schema},
    "/v2/info/import": {"GET": discovery.import_methods},
    "/v2/images": {"GET": images.list_images, "POST": images.create_image},
    "/v2/images/{image_id}": {
        "GET": images.show_image,
        "PATCH": images.update_image,
        "DELETE": images.delete_image,
    },
    "/v2/images/{image_id}/actions/deactivate": {"POST": actions.deactivate},
    "/v2/images/{image_id}/actions/reactivate": {"POST": actions.reactivate},
    "/v2/images/{image_id}/tags/{tag}": {"PUT": images.add_tag, "DELETE": images.delete_tag},
    "/v2/images/{image_id}/file": {"PUT": transfer.upload, "GET": transfer.download},
    "/v2/images/{image_id}/members": {
        "GET": members.list_members,
        "POST": members.add_member,
    },
    "/v2/images/{image_id}/members/{member_id}": {
        "GET": members.show_member,
        "PUT": members.update_member,
        "DELETE": members.delete_member,
    },
}
