#!/usr/bin/env bash
# Start a throwaway PostgreSQL server on 127.0.0.1 for the test suite and print the
# admin URL the tests use (MOORAGE_TEST_POSTGRESQL_URL). As root on Debian it installs
# the server from Debian's packages first. Exits non-zero, saying why, when it cannot.
set -euo pipefail

port=${MOORAGE_PG_PORT:-55432}
datadir=${MOORAGE_PG_DIR:-/tmp/moorage-test-postgresql}
url="postgresql://moorage@127.0.0.1:${port}/postgres"

find_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }

pg_bin=$(find_bin)
if [ -z "$pg_bin" ] || [ ! -x "$pg_bin/postgres" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "postgresql.sh: installing Debian's postgresql package" >&2
    apt-get -o DPkg::Lock::Timeout=600 update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends postgresql >&2
    pg_bin=$(find_bin)
  else
    echo "postgresql.sh: no PostgreSQL server installed and not root, cannot install one" >&2
    exit 1
  fi
fi

if "$pg_bin/pg_isready" -q -h 127.0.0.1 -p "$port"; then
  echo "$url"
  exit 0
fi

# PostgreSQL refuses to run as root: use the postgres account the package created.
as_owner=()
if [ "$(id -u)" = 0 ]; then
  id postgres >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql postgres
  as_owner=(runuser -u postgres --)
fi

if [ ! -f "$datadir/PG_VERSION" ]; then
  rm -rf "$datadir"
  mkdir -p "$datadir"
  [ "$(id -u)" = 0 ] && chown postgres: "$datadir"
  "${as_owner[@]}" "$pg_bin/initdb" -D "$datadir" -U moorage -A trust -E UTF8 >/dev/null
fi
"${as_owner[@]}" "$pg_bin/pg_ctl" -D "$datadir" -l "$datadir/server.log" -w -t 60 \
  -o "-c listen_addresses=127.0.0.1 -p $port -k $datadir -c fsync=off -c max_connections=200" \
  start >/dev/null
echo "$url"
