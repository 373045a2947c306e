#!/usr/bin/env bash
# Make sure Debian's chromium is at /usr/bin/chromium, for the Playwright browser test
# (tests/test_browser_space.py). Playwright's own browser download is not used: it is blocked on
# this project's machines, and Debian's package is what the test drives.
#
# Idempotent: does nothing when /usr/bin/chromium exists. When it is missing and apt-get exists,
# installs it (as root, or through sudo when that works without a password). When apt-get is
# missing, says so and exits 0: the browser test then skips with that reason.
set -euo pipefail

CHROMIUM=/usr/bin/chromium
if [ -x "$CHROMIUM" ]; then
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "ensure_chromium: $CHROMIUM is missing and apt-get is not available; the browser test will skip" >&2
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        SUDO="sudo -n"
    else
        echo "ensure_chromium: $CHROMIUM is missing and installing it needs root (no password-less sudo)" >&2
        exit 1
    fi
fi

echo "ensure_chromium: installing Debian's chromium with apt-get" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends chromium
test -x "$CHROMIUM"
