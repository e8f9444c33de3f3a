#!/usr/bin/env bash
# Make a Docker engine answer on this machine: install Debian's docker.io and debootstrap (and
# the static tini and busybox the case boxes run) if missing, start dockerd in the background
# if it is not running, wait for its socket.
#
# The engine this script starts keeps its data on a btrfs file system of its own (a sparse
# file mounted through a loop device, quotas on): every box's writable layer is then a btrfs
# subvolume with a quota, so a box cannot take more of the host's disk than its limit
# (icae_tui/sandbox/docker/disk.py). Where that cannot be set up (no loop devices, no btrfs), the
# engine uses its default data root and disk limits are watched from the host instead.
# An engine that is already running is used as it is.
set -euo pipefail

log() { echo "[engine] $*"; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

engine_up() { docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

ENGINE_HOME=${ICAE_ENGINE_HOME:-/var/lib/icae-engine}
DISK_IMAGE=$ENGINE_HOME/disk.btrfs
DATA_MOUNT=$ENGINE_HOME/data

need=()
command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
command -v docker >/dev/null 2>&1 || need+=(docker.io)
command -v mkfs.btrfs >/dev/null 2>&1 || need+=(btrfs-progs)
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

# The data root on btrfs with quotas; prints the folder to use, or nothing.
btrfs_data_root() {
  if ! mountpoint -q "$DATA_MOUNT" 2>/dev/null; then
    as_root mkdir -p "$DATA_MOUNT"
    if [ ! -f "$DISK_IMAGE" ]; then
      # Sparse: the host's disk is used only as the engine writes. At most 64 GiB, and at
      # most 80 % of what the host has free, so the loop device never outgrows its host.
      free_k=$(df -Pk "$ENGINE_HOME" | awk 'NR==2 {print $4}')
      size_k=$(( free_k * 8 / 10 ))
      [ "$size_k" -gt $(( 64 * 1024 * 1024 )) ] && size_k=$(( 64 * 1024 * 1024 ))
      as_root truncate -s "${size_k}K" "$DISK_IMAGE" || return 1
      as_root mkfs.btrfs -q "$DISK_IMAGE" >/dev/null || { as_root rm -f "$DISK_IMAGE"; return 1; }
    fi
    # discard: blocks freed in the file system are freed in the sparse file, on the host
    as_root mount -o loop,discard,noatime "$DISK_IMAGE" "$DATA_MOUNT" 2>/dev/null || return 1
  fi
  as_root btrfs quota enable "$DATA_MOUNT" >/dev/null || return 1
  echo "$DATA_MOUNT/docker"
}

# A pid file left by an engine that was killed stops a new one from starting.
if [ -f /var/run/docker.pid ] && ! kill -0 "$(cat /var/run/docker.pid)" 2>/dev/null; then
  as_root rm -f /var/run/docker.pid
fi
as_root mkdir -p "$ENGINE_HOME"
data_args=()
if root=$(btrfs_data_root) && [ -n "$root" ]; then
  log "data root $root (btrfs with quotas: disk limits enforced by the kernel)"
  # overlay2, not the btrfs driver the engine would pick there: the host view of a box reads
  # its overlay layers (sandbox/hostview.py)
  data_args=(--data-root "$root" --storage-driver overlay2)
else
  log "no btrfs data root here (loop device or btrfs missing): disk limits are watched from the host"
fi
log "starting dockerd (log: /tmp/icae-dockerd.log)"
as_root sh -c "nohup dockerd ${data_args[*]} >/tmp/icae-dockerd.log 2>&1 &"
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
