#!/usr/bin/env node
// The MPP evm session buyer (apps/merchant-agent/src/mpp/session-buyer.main.ts): streams a metered SSE resource,
// paying through a payment channel in the session escrow.
//
//   npm run session:buy -- <url> [--deposit <atomic>] [--open hash|authorization] [--max <atomic>] [--no-close]
//
// Builds the apps if a source is newer than the build, then runs the compiled buyer in this process.
import { pathToFileURL } from 'node:url';
import { appEntry, buildIfStale } from './lib/build.mjs';

buildIfStale({ log: (line) => console.error(`session-buyer: ${line}`) });
await import(pathToFileURL(appEntry('merchant-agent', 'mpp/session-buyer.main.js')).href);
