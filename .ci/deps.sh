#!/usr/bin/env bash
# Installs what `make test` needs on Debian 12, idempotently: PostgreSQL 15
# (server, client, pg_regress and pg_isolation_regress) for the local runs,
# debootstrap for the local images, rpm (rpmbuild, rpmspec), rpmlint and dnf
# for the RPM tests, dpkg-dev, debhelper, lintian and PostgreSQL 15's
# server-dev package for the deb builder and its tests, postgresql-all (the
# source package's build-time tests) and autopkgtest, Patroni with etcd (the
# HA manager of the patroni-failover fault test), redis-server for the
# benchmark's peer, pgbouncer for the pooled runs (bench, stress), qemu-user-static for the arm64 containers (registering
# its handler), shellcheck for actionlint, gpg (a release team's keys, made in the tests), gpgv and sqv for the signature checks, unzip for the PGXN zip, skopeo for the OCI layouts, and Go's module cache (of both modules). The Docker
# engine comes from .ci/docker.sh.
set -euo pipefail

# apt_locked runs an apt-get command, waiting while another apt or dpkg
# holds its lock (a fresh cloud machine's first unattended upgrade): up to
# APT_LOCK_WAIT seconds (600), saying so every 30 s, then failing with apt's
# own message. Any other failure fails at once.
apt_locked() {
  local waited=0 limit="${APT_LOCK_WAIT:-600}" out rc
  while :; do
    rc=0
    out=$("$@" -o DPkg::Lock::Timeout=5 2>&1) || rc=$?
    [ "$rc" -eq 0 ] && { [ -z "$out" ] || printf '%s\n' "$out"; return 0; }
    if ! grep -qE 'Could not get lock|Unable to acquire the dpkg frontend lock|Unable to lock directory' <<<"$out" || [ "$waited" -ge "$limit" ]; then
      printf '%s\n' "$out" >&2
      [ "$waited" -ge "$limit" ] && echo "deps: apt's lock was still held after ${limit} s: see which process holds it (fuser -v /var/lib/dpkg/lock-frontend /var/lib/apt/lists/lock) and run make deps again" >&2
      return "$rc"
    fi
    [ $((waited % 30)) -eq 0 ] && echo "deps: another apt or dpkg holds the lock (an unattended upgrade?): waiting, ${waited} s of at most ${limit} s" >&2
    sleep 5
    waited=$((waited + 5))
  done
}

need=()
for pkg in postgresql-15 postgresql-client-15 libpq-dev make debootstrap rpm rpmlint dnf redis-server pgbouncer \
  dpkg-dev debhelper lintian postgresql-server-dev-all postgresql-server-dev-15 xz-utils \
  postgresql-all autopkgtest patroni etcd-server python3-etcd \
  qemu-user-static binfmt-support shellcheck gpg gpg-agent gpgv sqv unzip skopeo; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "deps: missing ${need[*]}: run as root, or apt-get install ${need[*]}" >&2
    exit 1
  fi
  echo "deps: installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt_locked apt-get update -qq
  # The server package's own cluster is not needed: tests start their own.
  mkdir -p /etc/postgresql-common
  grep -qs '^create_main_cluster' /etc/postgresql-common/createcluster.conf ||
    echo 'create_main_cluster = false' >> /etc/postgresql-common/createcluster.conf
  apt_locked apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
# arm64 containers run under qemu: its handler must be registered with the
# kernel (Debian's package registers it with the F flag, which containers need)
if [ "$(uname -m)" = x86_64 ] && [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
  [ -e /proc/sys/fs/binfmt_misc/register ] || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
  update-binfmts --enable qemu-aarch64
fi
command -v go >/dev/null || { echo "deps: go is not on PATH (expected /usr/local/go/bin)" >&2; exit 1; }
go mod download
(cd bench && go mod download)
(cd lease && go mod download)
# the benchmark starts its own Redis and the tests their own PgBouncer; the
# packages' services are not wanted
for svc in redis-server pgbouncer etcd patroni; do
  if command -v systemctl >/dev/null && systemctl is-active --quiet "$svc" 2>/dev/null; then
    systemctl stop "$svc" || true
  fi
done
