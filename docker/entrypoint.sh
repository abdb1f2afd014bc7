#!/bin/sh
# Runs pending migrations (idempotent, guarded by an advisory lock, so replicas may race safely), then the app.
set -eu
app="${1:-facilitator}"
case "$app" in
  facilitator|ledger|merchant-agent) ;;
  *) echo "usage: entrypoint facilitator|ledger|merchant-agent" >&2; exit 2 ;;
esac
if [ "$app" != "merchant-agent" ]; then
  node scripts/migrate.mjs deploy
fi
exec node "dist/apps/$app/apps/$app/src/main.js"
