import { chromium, type Browser } from 'playwright-core';

/**
 * Flags of @sparticuz/chromium's default set that we leave out: they switch off the browser's own protections
 * (same-origin policy, mixed-content blocking), and a test of what a page may load must see those working.
 */
const WEAKENING_FLAGS = new Set(['--disable-web-security', '--allow-running-insecure-content']);

/**
 * Headless Chromium from npm, nothing from the OS: @sparticuz/chromium carries a brotli-packed build in its package and
 * unpacks it to /tmp on first use; playwright-core drives it. Its flags include --no-sandbox and --headless='shell',
 * which this build needs to start as root in a container.
 */
export async function launchChromium(): Promise<Browser> {
  // The package is ESM-only; a dynamic import loads it from this CommonJS-compiled file.
  const { default: packed } = await import('@sparticuz/chromium');
  return chromium.launch({
    executablePath: await packed.executablePath(),
    args: packed.args.filter((flag) => !WEAKENING_FLAGS.has(flag)),
    headless: true,
  });
}
