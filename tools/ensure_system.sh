#!/usr/bin/env bash
# Installs the system programs the book and its tests need, when they are missing:
#   npm      installs the pinned JavaScript (Vega, MathJax, RequireJS, widget manager) served with the book
#   chromium the headless browser of the browser test
# Debian/Ubuntu packages where apt is available (as root or with passwordless sudo); otherwise Playwright's
# own browser; otherwise a message that says what to install.
#   bash tools/ensure_system.sh [BIN] [npm|all]    npm: only what `make book` needs; all (default): the browser too
set -euo pipefail
BIN=${1:-.venv/bin}
WHAT=${2:-all}
case "$WHAT" in
  npm|all) ;;
  *) echo "ensure_system.sh: the second argument is npm or all, not '$WHAT'" >&2; exit 2 ;;
esac

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo "$@"; else return 1; fi
}
apt_install() {
  command -v apt-get >/dev/null || return 1
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null &&
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

if ! command -v npm >/dev/null; then
  echo "npm not found: installing Debian's nodejs and npm"
  apt_install nodejs npm || { echo "Please install Node.js with npm (https://nodejs.org), then run make again." >&2; exit 1; }
fi

if [ "$WHAT" = npm ]; then
  exit 0
fi
if command -v chromium >/dev/null || command -v chromium-browser >/dev/null || command -v google-chrome >/dev/null; then
  exit 0
fi
echo "no Chromium found: installing one for the browser test"
if apt_install chromium; then exit 0; fi
if [ -x "$BIN/playwright" ] && "$BIN/playwright" install chromium; then exit 0; fi
echo "Could not install a browser. Install Chromium (Debian/Ubuntu: apt-get install chromium), or run" >&2
echo "  $BIN/playwright install chromium" >&2
exit 1
