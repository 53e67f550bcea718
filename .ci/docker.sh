#!/usr/bin/env bash
# Makes sure a Docker daemon answers, idempotently: installs Debian's
# docker.io when dockerd is missing and starts dockerd when no daemon
# answers. This machine has no network bridge to offer containers, so the
# daemon runs without one (--bridge=none, no iptables); the tests run their
# containers with network mode none. A daemon that already answers is left
# alone.
set -euo pipefail

answers() { docker info >/dev/null 2>&1; }

if answers; then
  exit 0
fi
if ! command -v dockerd >/dev/null || ! command -v docker >/dev/null; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "docker: no Docker daemon answers and dockerd is not installed: run as root, or apt-get install docker.io" >&2
    exit 1
  fi
  echo "docker: installing docker.io"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends docker.io >/dev/null
fi
if answers; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "docker: no Docker daemon answers; start one (as root: dockerd --bridge=none --iptables=false) or set DOCKER_HOST" >&2
  exit 1
fi
log=/var/log/pglease-dockerd.log
echo "docker: starting dockerd --bridge=none --iptables=false (log: $log)"
nohup dockerd --bridge=none --iptables=false --ip6tables=false >"$log" 2>&1 &
for _ in $(seq 1 60); do
  if answers; then
    echo "docker: daemon is up"
    exit 0
  fi
  sleep 1
done
echo "docker: dockerd did not answer within 60 s; the end of $log:" >&2
tail -n 20 "$log" >&2
exit 1
