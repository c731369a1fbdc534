#!/usr/bin/env bash
# A throwaway PostgreSQL 15 cluster on loopback for tests.
#
#   eval "$(.ci/postgres.sh start)"   # prints export BAS_PG_DSN=... and BAS_PG_DIR=...
#   .ci/postgres.sh stop "$BAS_PG_DIR"
#
# For tests the cluster does not sync (fsync=off, synchronous_commit=off):
# it is thrown away. BAS_PG_DURABLE=1 keeps PostgreSQL's durable defaults,
# for benchmarks that should pay what production pays.
# initdb refuses to run as root, so as root the cluster is made and run by
# the unprivileged `postgres` user; otherwise by the current user. The data
# directory and the socket live in a new temp directory that stop removes.
set -euo pipefail

bindir=${PG_BINDIR:-}
if [ -z "$bindir" ]; then
  for d in /usr/lib/postgresql/15/bin /usr/lib/postgresql/*/bin; do
    if [ -x "$d/initdb" ]; then bindir=$d; break; fi
  done
fi
if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
  echo "postgres.sh: no initdb found (install Debian's postgresql-15, or set PG_BINDIR)" >&2
  exit 1
fi

as_pg() {
  if [ "$(id -u)" = 0 ]; then
    (cd / && su postgres -s /bin/sh -c "$1")
  else
    sh -c "$1"
  fi
}

case "${1:-}" in
start)
  dir=$(mktemp -d /tmp/bas-pg.XXXXXX)
  chmod 755 "$dir"
  if [ "$(id -u)" = 0 ]; then chown postgres "$dir"; fi
  fast="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
  if [ "${BAS_PG_DURABLE:-}" = 1 ]; then fast=""; fi
  port=${PG_PORT:-$(( 20000 + RANDOM % 20000 ))}
  as_pg "'$bindir/initdb' -D '$dir/data' -A trust -U bas -E UTF8 --no-locale >'$dir/initdb.log' 2>&1" || {
    cat "$dir/initdb.log" >&2; exit 1; }
  as_pg "'$bindir/pg_ctl' -D '$dir/data' -l '$dir/server.log' -o \"-p $port -k '$dir' -c listen_addresses=127.0.0.1 -c max_connections=300 $fast\" start -w >/dev/null" || {
    cat "$dir/server.log" >&2; exit 1; }
  echo "export BAS_PG_DIR='$dir'"
  echo "export BAS_PG_DSN='postgres://bas@127.0.0.1:$port/postgres?sslmode=disable'"
  ;;
stop)
  dir=${2:-${BAS_PG_DIR:-}}
  if [ -z "$dir" ] || [ ! -d "$dir/data" ]; then
    echo "postgres.sh stop: give the directory start printed (BAS_PG_DIR)" >&2; exit 1
  fi
  as_pg "'$bindir/pg_ctl' -D '$dir/data' stop -m immediate -w >/dev/null" || true
  rm -rf "$dir"
  ;;
*)
  echo "usage: $0 start | stop DIR" >&2; exit 2
  ;;
esac
