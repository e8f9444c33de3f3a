"""The host-side model gateway: one per run, on a Unix socket; see `server`."""

from icae_tui.gateway.models import (
    BODY_CAP,
    GatewayConfig,
    InfraFailure,
    ModelCall,
    WireApi,
    dump_call,
    dump_calls,
    load_calls,
    request_hash,
)
from icae_tui.gateway.server import (
    CONTAINER_DIR,
    FOLDER_PREFIX,
    SOCKET_NAME,
    ModelGateway,
    model_proxy_script,
    serving,
)
from icae_tui.gateway.upstream import (
    HttpUpstream,
    MissingKey,
    ReplayDivergence,
    ReplayUpstream,
    Upstream,
    UpstreamUnreachable,
)

__all__ = [
    "BODY_CAP",
    "CONTAINER_DIR",
    "FOLDER_PREFIX",
    "SOCKET_NAME",
    "GatewayConfig",
    "HttpUpstream",
    "InfraFailure",
    "MissingKey",
    "ModelCall",
    "ModelGateway",
    "ReplayDivergence",
    "ReplayUpstream",
    "Upstream",
    "UpstreamUnreachable",
    "WireApi",
    "dump_call",
    "dump_calls",
    "load_calls",
    "model_proxy_script",
    "request_hash",
    "serving",
]
