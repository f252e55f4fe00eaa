"""GET /metrics: the service's counters in Prometheus text format, for the operator's
Prometheus. Admin only by default (``placement:metrics``); anyone, with no token, under
``[api] public_metrics``."""

from __future__ import annotations

from moorage.metrics import CONTENT_TYPE
from moorage.placement.http import Request, Response

RULE = "placement:metrics"


def show_metrics(req: Request) -> Response:
    if not req.service.conf.api.public_metrics:
        req.authorize(RULE)
    return Response(status=200, body=req.service.metrics.render(), content_type=CONTENT_TYPE)
