import { spawn } from 'node:child_process';
import path from 'node:path';
import { freePort } from './support/net';

/** The README's quick start, for real: the whole system comes up and a buyer pays the merchant on chain. */
describe('npm start (the demo)', () => {
  it('builds, starts chain, facilitator, ledger and merchant, and completes a paid purchase', async () => {
    const root = path.resolve(__dirname, '..');
    const env = {
      ...process.env,
      CHAIN_PORT: String(await freePort()),
      FACILITATOR_PORT: String(await freePort()),
      LEDGER_PORT: String(await freePort()),
      MERCHANT_PORT: String(await freePort()),
      FAKE_STRIPE_PORT: String(await freePort()),
      // Its own database: the demo clears its tables at start.
      DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/machine_payments_demo_test',
    };
    const child = spawn(process.execPath, ['scripts/demo.mjs', '--exit'], { cwd: root, env });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));

    expect(output).toContain('buyer: 402 Payment Required: 10000 atomic units');
    expect(output).toMatch(/buyer: 200 OK: settled in 0x[0-9a-f]{64} on eip155:31337/);
    expect(output).toMatch(/demo: transaction 0x[0-9a-f]{64}: success in block \d+/);
    expect(output).toContain('merchant USDC 0.000000 → 0.010000');
    expect(output).toMatch(/demo: MPP evm: paid, Payment-Receipt reference 0x[0-9a-f]{64}/);
    expect(output).toMatch(/demo: MPP stripe: paid, Payment-Receipt reference pi_\w+/);
    expect(code).toBe(0);
  }, 240_000);
});
