"""One check for every model endpoint's URL, wherever it is given: an agents file's
`base_url`, `icae run --user-/--judge-/--critic-base-url`, `icae runs rescore
--judge-base-url`. A URL that is not http(s) with a host is refused (`file:///etc/passwd` is
no endpoint); one that points at a link-local or cloud metadata address is allowed but
warned about, since the run's gateway would send its calls (and the key) there."""

from __future__ import annotations

import ipaddress
import sys
from urllib.parse import urlsplit

from icae_tui.util.safe_text import printable

SCHEMES = ("http", "https")
# the instance metadata services of the clouds (AWS, GCP, Azure, OpenStack: the first;
# AWS over IPv6; Alibaba), which hand out credentials to whoever asks
METADATA_HOSTS = frozenset(
    {"169.254.169.254", "fd00:ec2::254", "metadata.google.internal", "metadata", "100.100.100.200"}
)


def url_problem(url: str) -> str | None:
    """Why `url` is not an endpoint's URL, or None."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - a port that is not a number raises here
    except ValueError as err:
        return f"not a URL ({err})"
    if parts.scheme not in SCHEMES or not parts.hostname or any(c.isspace() for c in url):
        return "must be an http:// or https:// URL with a host, e.g. http://localhost:8000/v1"
    return None


def url_warning(url: str) -> str | None:
    """What is risky about a sound endpoint URL's host (metadata, link-local), or None. The
    host is read as written: names other than the metadata ones are not resolved."""
    host = (urlsplit(url).hostname or "").lower().rstrip(".")
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])  # fe80::1%eth0: its zone
    except ValueError:
        address = None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if host in METADATA_HOSTS or (address is not None and str(address) in METADATA_HOSTS):
        return f"{host} is a cloud metadata address: calls (and the key) would go to it"
    if address is not None and address.is_link_local:
        return f"{host} is a link-local address: calls (and the key) would go to it"
    return None


def flag_problem(flag: str, url: str) -> str | None:
    """The error line's text for a URL option (`--judge-base-url`) that is no endpoint."""
    problem = url_problem(url)
    return None if problem is None else f"{flag} {url!r}: {problem}"


def warn_endpoint(what: str, url: str) -> None:
    """A warning line on stderr when the endpoint `what` names (a flag, an entry) is a
    link-local or cloud metadata address; it is still used."""
    if (why := url_warning(url)) is not None:
        print(printable(f"warning: {what} {url}: {why}", limit=500), file=sys.stderr)
