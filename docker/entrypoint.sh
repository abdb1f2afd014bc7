#!/bin/sh
# Runs pending migrations (idempotent, guarded by an advisory lock, so replicas may race safely), then the app.
# The fake Stripe (compose and local tries only) needs no database.
set -eu
app="${1:-facilitator}"
case "$app" in
  facilitator|ledger|merchant-agent) main="dist/apps/$app/apps/$app/src/main.js" ;;
  fake-stripe) main="dist/apps/fake-stripe/libs/stripe/src/main.js" ;;
  *) echo "usage: entrypoint facilitator|ledger|merchant-agent|fake-stripe" >&2; exit 2 ;;
esac
# for the image's HEALTHCHECK (docker/healthcheck.mjs), which cannot see this container's command
echo "$app" > /tmp/machine-payments-app
if [ "$app" = "facilitator" ] || [ "$app" = "ledger" ]; then
  node scripts/migrate.mjs deploy
fi
exec node "$main"
