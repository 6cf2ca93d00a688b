#!/usr/bin/env bash
# A throwaway PostgreSQL for tests, from Debian's packages.
#   scripts/ci-postgres.sh start    install postgresql with apt if needed (root only), initdb a
#                                   cluster in a temp dir, start it on 127.0.0.1 and print its URL
#                                   (postgres://postgres@127.0.0.1:PORT/postgres) on stdout
#   scripts/ci-postgres.sh stop     stop that server and remove its directory (no-op when none)
#   scripts/ci-postgres.sh status   print the URL of the running server, or fail
# Everything but the URL goes to stderr:
#   TEST_DATABASE_URL="$(scripts/ci-postgres.sh start)"; export TEST_DATABASE_URL
# (assign, then export: `export X="$(...)"` would hide a failed start from `set -e`).
# The cluster is for tests only: trust auth, fsync off, data thrown away on stop.
# Environment: CI_POSTGRES_PORT (first port tried, default 55432; the next free one is taken),
# CI_POSTGRES_STATE (where start records what stop needs; default below, one per user and checkout).
# As root, initdb and pg_ctl run as the postgres user (`runuser -u postgres --`), as PostgreSQL
# refuses to run as root; as another user they run as that user.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE="${CI_POSTGRES_STATE:-${TMPDIR:-/tmp}/ci-postgres.$(id -u).$(printf '%s' "$ROOT" | cksum | cut -d' ' -f1).state}"

log() { echo "ci-postgres: $*" >&2; }
die() { log "$*"; exit 1; }

# The newest installed server's bin directory, or nothing (and success either way: under
# pipefail a failing glob or test here would end the script before it could install).
pg_bin() {
  local d found=""
  for d in /usr/lib/postgresql/*/bin; do
    if [ -x "$d/initdb" ]; then found="$found$d"$'\n'; fi
  done
  printf '%s' "$found" | sort -V | tail -n 1
}

as_pg() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Reads the state file into DIR, PORT, BIN; fails when there is none.
read_state() {
  [ -f "$STATE" ] || return 1
  # shellcheck disable=SC1090
  . "$STATE"
  [ -n "${DIR:-}" ] && [ -n "${PORT:-}" ] && [ -n "${BIN:-}" ]
}

url() { echo "postgres://postgres@127.0.0.1:$1/postgres"; }

install_postgres() {
  [ "$(id -u)" -eq 0 ] || die "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb); install it with: sudo apt-get install postgresql"
  log "installing postgresql with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends postgresql >&2
}

start() {
  if read_state && as_pg "$BIN/pg_ctl" -D "$DIR/data" status >/dev/null 2>&1; then
    die "already running at $(url "$PORT") (state $STATE); run '$0 stop' first"
  fi
  rm -f "$STATE"
  local t0 bin dir port
  t0=$(date +%s%N)
  bin="$(pg_bin)"
  if [ -z "$bin" ]; then
    install_postgres
    bin="$(pg_bin)"
    [ -n "$bin" ] || die "postgresql installed but no /usr/lib/postgresql/*/bin/initdb found"
    log "installed in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
  fi
  if [ "$(id -u)" -eq 0 ]; then
    id postgres >/dev/null 2>&1 || die "running as root but there is no postgres user to run the server as"
  fi

  port="${CI_POSTGRES_PORT:-55432}"
  local last=$((port + 100))
  while port_in_use "$port"; do
    port=$((port + 1))
    [ "$port" -le "$last" ] || die "no free port in ${CI_POSTGRES_PORT:-55432}..$last"
  done

  dir="$(mktemp -d "${TMPDIR:-/tmp}/ci-postgres.XXXXXX")"
  chmod 755 "$dir"
  if [ "$(id -u)" -eq 0 ]; then chown postgres: "$dir"; fi
  # Recorded before the server starts, so stop can clean up after a failed start too.
  printf 'DIR=%q\nPORT=%q\nBIN=%q\n' "$dir" "$port" "$bin" >"$STATE"

  if ! as_pg "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-locale --no-sync >"$dir/initdb.log" 2>&1; then
    cat "$dir/initdb.log" >&2 || true
    stop
    die "initdb failed"
  fi
  cat >>"$dir/data/postgresql.conf" <<EOF
# ci-postgres.sh: a throwaway cluster for tests
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 200
EOF
  # pg_stat_statements when the server has it: the gateway's cost guard counts the statements the
  # server runs (adapters/node-http/test/GatewayCost.test.ts); without it that count is skipped.
  if [ -f "$(dirname "$bin")/lib/pg_stat_statements.so" ]; then
    printf "shared_preload_libraries = 'pg_stat_statements'\npg_stat_statements.max = 10000\n" >>"$dir/data/postgresql.conf"
  fi
  if ! as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null; then
    cat "$dir/server.log" >&2 || true
    stop
    die "the server did not start"
  fi
  log "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') up on 127.0.0.1:$port in $(( ($(date +%s%N) - t0) / 1000000 )) ms (data in $dir)"
  url "$port"
}

stop() {
  read_state || { log "nothing to stop"; return 0; }
  if [ -f "$DIR/data/postmaster.pid" ]; then
    as_pg "$BIN/pg_ctl" -D "$DIR/data" -m fast -w -t 30 stop >/dev/null 2>&1 ||
      as_pg "$BIN/pg_ctl" -D "$DIR/data" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  case "$DIR" in
    "${TMPDIR:-/tmp}"/ci-postgres.*) rm -rf "$DIR" ;;
    *) log "not removing unexpected directory $DIR" ;;
  esac
  rm -f "$STATE"
  log "stopped"
}

status() {
  read_state && as_pg "$BIN/pg_ctl" -D "$DIR/data" status >/dev/null 2>&1 || die "not running"
  url "$PORT"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) sed -n '2,15p' "$0" >&2; exit 2 ;;
esac
