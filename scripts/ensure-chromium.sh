#!/bin/sh
# The browser test drives Debian's Chromium through Playwright; install it when it is missing.
command -v chromium >/dev/null 2>&1 && exit 0
echo "chromium is missing: installing Debian's package (needed by tests/test_browser.py)"
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
