#!/usr/bin/env bash
# What the tests need that npm cannot install, made ready before `npm test` (its pretest step).
# Idempotent: on a machine that already has everything it only checks, in well under a second.
#
#   Chromium    Debian's package at /usr/bin/chromium (browser tests drive it via playwright-core)
#   Redis       127.0.0.1:6379, or $REDIS_URL (shared rate-limit tests; others start their own)
#   PostgreSQL  the local cluster, started if it is installed and down
#   Dovecot     Debian's dovecot-imapd at /usr/sbin/dovecot (IMAP sync tests start private servers;
#               the package's own system service is stopped and disabled so it holds no port)
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

# Dovecot for the IMAP sync tests (test/helpers/dovecot.ts runs private servers with its binary).
# Installing the package may start its system service on 143/993: stop and disable it, every run,
# so no system Dovecot is left listening (the tests start their own on free ports).
if [ ! -x /usr/sbin/dovecot ]; then apt_install dovecot-imapd; fi
if [ -f /run/dovecot/master.pid ] && kill -0 "$(cat /run/dovecot/master.pid)" 2>/dev/null; then
  say "stopping the system Dovecot service (tests start their own)"
  if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
    as_root systemctl disable --now dovecot.service dovecot.socket >/dev/null 2>&1 || true
  fi
  if [ -f /run/dovecot/master.pid ] && kill -0 "$(cat /run/dovecot/master.pid)" 2>/dev/null; then
    as_root /usr/sbin/dovecot stop >/dev/null 2>&1 || as_root kill "$(cat /run/dovecot/master.pid)" || true
  fi
fi
if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ] &&
  systemctl is-enabled dovecot.service >/dev/null 2>&1; then
  as_root systemctl disable dovecot.service >/dev/null 2>&1 || true
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
