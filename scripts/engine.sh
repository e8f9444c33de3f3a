#!/usr/bin/env bash
# Make a Docker engine answer on this machine: install Debian's docker.io and debootstrap (and
# the static tini and busybox the case boxes run) if missing, start dockerd in the background
# if it is not running, wait for its socket.
set -euo pipefail

log() { echo "[engine] $*"; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

engine_up() { docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

need=()
command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
command -v docker >/dev/null 2>&1 || need+=(docker.io)
# Static binaries bind-mounted as every case box's init and keepalive (sandbox/keepalive.py).
[ -x /usr/bin/tini-static ] || need+=(tini)
dpkg -s busybox-static >/dev/null 2>&1 || need+=(busybox-static)
if [ ${#need[@]} -gt 0 ]; then
  log "installing ${need[*]} (Debian packages)"
  as_root apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -q "${need[@]}" >/dev/null
fi

if engine_up; then
  log "engine running: $(docker version --format '{{.Server.Version}}')"
  exit 0
fi

# A pid file left by an engine that was killed stops a new one from starting.
if [ -f /var/run/docker.pid ] && ! kill -0 "$(cat /var/run/docker.pid)" 2>/dev/null; then
  as_root rm -f /var/run/docker.pid
fi
log "starting dockerd (log: /tmp/icae-dockerd.log)"
as_root sh -c 'nohup dockerd >/tmp/icae-dockerd.log 2>&1 &'
for _ in $(seq 1 60); do
  if engine_up; then
    log "engine running: $(docker version --format '{{.Server.Version}}')"
    exit 0
  fi
  sleep 1
done
log "dockerd did not answer within 60 s; last lines of its log:"
tail -20 /tmp/icae-dockerd.log >&2 || true
exit 1
