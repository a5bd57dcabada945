#!/usr/bin/env bash
# Installs puppeteer-core (pinned in tests/gui/package-lock.json) for the gui tests, which
# drive Debian's chromium. --ignore-scripts: nothing is downloaded besides the package (the
# browser is /usr/bin/chromium, never fetched).
set -euo pipefail
cd "$(dirname "$0")/../tests/gui"
if [ -f node_modules/puppeteer-core/package.json ] &&
   node -e "process.exit(require('./node_modules/puppeteer-core/package.json').version === require('./package.json').dependencies['puppeteer-core'] ? 0 : 1)"; then
  exit 0
fi
npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
node -e "require('puppeteer-core'); console.log('puppeteer-core', require('puppeteer-core/package.json').version, 'ready')"
