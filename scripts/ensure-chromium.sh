#!/usr/bin/env bash
# Debian's Chromium for the headless browser tests (playwright-core drives /usr/bin/chromium; it
# cannot download a browser of its own here). Installs it with apt-get when it is missing, as
# root; otherwise only says what is there. Everything goes to stderr.
#   scripts/ensure-chromium.sh        install if needed, then print the version
# Environment: CHROMIUM_PATH (default /usr/bin/chromium).
set -euo pipefail
CHROMIUM="${CHROMIUM_PATH:-/usr/bin/chromium}"

log() { echo "ensure-chromium: $*" >&2; }

if [ ! -x "$CHROMIUM" ]; then
  if [ "$(id -u)" -ne 0 ]; then
    log "$CHROMIUM is missing and installing it needs root: apt-get install chromium"
    exit 1
  fi
  log "installing chromium with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends chromium >&2
fi

if [ ! -x "$CHROMIUM" ]; then
  log "$CHROMIUM is still missing after the install"
  exit 1
fi
log "$("$CHROMIUM" --version 2>/dev/null || echo "$CHROMIUM (version unknown)")"
