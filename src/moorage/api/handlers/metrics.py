"""GET /metrics: the compute API's request counters and, when the conductor runs in
this process, its boots, reschedules and NoValidHosts, in Prometheus text format."""

from __future__ import annotations

from moorage.api.http import ApiRequest
from moorage.metrics import CONTENT_TYPE
from moorage.web import Response

RULE = "moorage:metrics"


def show_metrics(req: ApiRequest) -> Response:
    """The service's metrics in Prometheus text format (admin by default)."""
    if not req.state.conf.api.public_metrics:
        req.authorize(RULE)
    body = req.state.metrics.render(conductor=req.state.conductor is not None)
    return Response(status=200, body=body, content_type=CONTENT_TYPE)
