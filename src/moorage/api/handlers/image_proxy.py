"""Nova's image proxy (``GET /images``, ``/images/detail``, ``/images/{id}``): the image
service's images in nova's shape, until microversion 2.36 removed them (404 from
there, as nova's routes are). Nova reads glance with the caller's token; here the
same rows and the same visibility rules (``moorage.image.store``) are read directly.

    {"images": [{"id", "name", "links"}], "images_links"?}     the index
    {"image": {"id", "name", "status", "progress", "minDisk", "minRam", "metadata",
               "created", "updated", "OS-EXT-IMG-SIZE:size", "links", "server"?}}

Moorage's own view (visibility, formats, properties, ``moorage:bootable`` on writes)
answers a client that sends ``Moorage-Additions: 1`` (``moorage.api.handlers.images``).
"""

from __future__ import annotations

from moorage.api.errors import BadRequest, NotFound
from moorage.api.handlers.paging import page_body, page_limit
from moorage.api.http import ApiRequest, json_response
from moorage.api.microversion import IMAGE_PROXY_REMOVED
from moorage.api.timestamps import iso_time
from moorage.image import query as image_query
from moorage.image import store
from moorage.image.errors import ImageError
from moorage.image.records import ImageStatus, StoredImage
from moorage.jsonvalue import JSONValue
from moorage.web import Response

# nova's api/openstack/compute/views/images.py
NOVA_STATUS = {ImageStatus.ACTIVE: "ACTIVE", ImageStatus.QUEUED: "SAVING",
               ImageStatus.SAVING: "SAVING", ImageStatus.DELETED: "DELETED"}
PROGRESS = {ImageStatus.QUEUED: 25, ImageStatus.SAVING: 50, ImageStatus.ACTIVE: 100}
GLANCE_MEDIA_TYPE = "application/vnd.openstack.image"


def _refuse_removed(req: ApiRequest) -> None:
    if req.at(IMAGE_PROXY_REMOVED):
        raise NotFound("The resource could not be found.")


def _links(req: ApiRequest, image_id: str) -> list[dict[str, str]]:
    return [*req.link("images", image_id),
            {"rel": "alternate", "type": GLANCE_MEDIA_TYPE,
             "href": req.absolute_url(f"/image/images/{image_id}")}]


def _summary(req: ApiRequest, image: StoredImage) -> dict[str, JSONValue]:
    return {"id": image.id, "name": image.name, "links": _links(req, image.id)}


def _detail(req: ApiRequest, image: StoredImage) -> dict[str, JSONValue]:
    view: dict[str, JSONValue] = {
        "id": image.id, "name": image.name,
        "minRam": image.min_ram, "minDisk": image.min_disk,
        "metadata": dict(image.properties),
        "created": iso_time(image.created_at), "updated": iso_time(image.updated_at),
        "status": NOVA_STATUS.get(image.status, "UNKNOWN"),
        "progress": PROGRESS.get(image.status, 0),
        "OS-EXT-IMG-SIZE:size": image.size,
        "links": _links(req, image.id),
    }
    server = image.properties.get("instance_uuid")
    if server:  # a snapshot names its server
        view["server"] = {"id": server, "links": req.link("servers", server)}
    return view


# nova's minimum filters -> the image's attribute
MINIMUMS = {"minRam": "min_ram", "minDisk": "min_disk"}


def _wanted(req: ApiRequest) -> tuple[image_query.ImageQuery, dict[str, int]]:
    """Nova's filters (name, status, changes-since) as the image service's query,
    newest first, and its minimum filters (minRam, minDisk) by attribute."""
    pairs: list[tuple[str, str]] = []
    for name, value in req.query.items():
        if name in ("name", "marker"):
            pairs.append((name, value))
        elif name == "status":  # nova's word: the image service's states it covers
            states = [s.value for s, word in NOVA_STATUS.items() if word == value.upper()]
            pairs.append(("status", "in:" + ",".join(states or [value.lower()])))
        elif name == "changes-since":
            pairs.append(("updated_at", f"gte:{value}"))
    minimums: dict[str, int] = {}
    for name, attribute in MINIMUMS.items():
        text = req.query.get(name)
        if text is None:
            continue
        if not (text.isascii() and text.isdigit()):
            raise BadRequest(f"Invalid {name} filter [{text}]; allowed: an integer >= 0.")
        minimums[attribute] = int(text)
    try:
        return image_query.parse(pairs), minimums
    except ImageError as exc:
        raise BadRequest(exc.message) from None


def _listed(req: ApiRequest) -> tuple[list[StoredImage], str | None]:
    wanted, minimums = _wanted(req)
    listing = store.Listing(req.context.project_id, req.context.is_admin)
    with req.state.database.reader() as conn:
        found = store.select(conn, [store.listable(listing), *store.query_clauses(wanted)])
    found = [i for i in found
             if all(getattr(i, attribute) >= least for attribute, least in minimums.items())]
    try:
        chosen, _ = image_query.page(image_query.ordered(found, wanted.sort), wanted.marker,
                                     page_limit(req.query))
    except ImageError as exc:
        raise BadRequest(exc.message) from None
    return chosen, chosen[-1].id if chosen else None


def index(req: ApiRequest) -> Response:
    _refuse_removed(req)
    req.authorize("get_images")
    chosen, last = _listed(req)
    views = [_summary(req, i) for i in chosen]
    return json_response(page_body(req, "images", "images", views, last))


def detail(req: ApiRequest) -> Response:
    _refuse_removed(req)
    req.authorize("get_images")
    chosen, last = _listed(req)
    views = [_detail(req, i) for i in chosen]
    return json_response(page_body(req, "images/detail", "images", views, last))


def show(req: ApiRequest) -> Response:
    _refuse_removed(req)
    req.authorize("get_image")
    image_id = req.params["image_id"]
    with req.state.database.reader() as conn:
        image = store.load(conn, image_id)
        if image is None or not store.visible(conn, image, req.context.project_id,
                                              req.context.is_admin):
            raise NotFound("Image not found.")
    return json_response({"image": _detail(req, image)})
