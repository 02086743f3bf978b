#!/usr/bin/env bash
# What the tests need that npm cannot install, made ready before `npm test` (its pretest step).
# Idempotent: on a machine that already has everything it only checks, in well under a second.
#
#   Chromium    Debian's package at /usr/bin/chromium (browser tests drive it via playwright-core)
#   Redis       127.0.0.1:6379, or $REDIS_URL (shared rate-limit tests; others start their own)
#   PostgreSQL  the local cluster, started if it is installed and down
set -euo pipefail

say() { printf 'test prerequisites: %s\n' "$*" >&2; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"
  elif command -v sudo >/dev/null 2>&1; then sudo -n "$@"
  else say "need root to run: $*"; return 1
  fi
}

apt_updated=0
apt_install() {
  if ! command -v apt-get >/dev/null 2>&1; then
    say "cannot install $* (no apt-get here): install it and run the tests again"; exit 1
  fi
  if [ "$apt_updated" = 0 ]; then as_root apt-get update -qq; apt_updated=1; fi
  say "installing $* from Debian's packages"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# Chromium for test/browser.test.ts.
if [ ! -x /usr/bin/chromium ]; then apt_install chromium; fi

# Redis: a server to share rate-limit budgets through, and the binary tests start their own from.
if ! command -v redis-server >/dev/null 2>&1; then apt_install redis-server; fi
if [ -z "${REDIS_URL:-}" ] && ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  say "starting Redis on 127.0.0.1:6379"
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no >/dev/null
  for _ in $(seq 1 50); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && break; sleep 0.1; done
  redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 || { say "Redis did not start"; exit 1; }
fi

# PostgreSQL: start the local cluster when it is installed but down.
if command -v pg_lsclusters >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
  for version in $(ls /etc/postgresql); do
    if pg_lsclusters --no-header 2>/dev/null | awk -v v="$version" '$1 == v && $2 == "main" && $4 != "online" { found = 1 } END { exit !found }'; then
      say "starting PostgreSQL $version"
      as_root pg_ctlcluster --skip-systemctl-redirect "$version" main start
    fi
  done
fi
