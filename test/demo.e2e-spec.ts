import { spawn } from 'node:child_process';
import path from 'node:path';
import { freePort } from './support/net';

/**
 * The README's quick start, for real: the whole system comes up, buyers pay the merchant over x402, MPP (evm and
 * stripe) and A2A, subscribe over MPP (evm and stripe), renew, cancel and are refunded; the ledger books every payment and
 * reconciliation runs over them are clean.
 */
describe('npm start (the demo)', () => {
  let demo: ReturnType<typeof spawn> | undefined;
  // a timed-out test leaves the demo running: SIGTERM makes it stop its apps and its chain
  afterAll(() => {
    if (demo?.exitCode === null) demo.kill('SIGTERM');
  });

  it('builds, starts everything, buys over x402, MPP and A2A, books it all and reconciles it clean', async () => {
    const root = path.resolve(__dirname, '..');
    const env = {
      ...process.env,
      CHAIN_PORT: String(await freePort()),
      FACILITATOR_PORT: String(await freePort()),
      LEDGER_PORT: String(await freePort()),
      MERCHANT_PORT: String(await freePort()),
      FAKE_STRIPE_PORT: String(await freePort()),
      // Its own database (the demo clears its tables at start), named after the suite's so parallel suites stay apart.
      DATABASE_URL: `${process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/machine_payments_test'}_demo`,
    };
    const child = (demo = spawn(process.execPath, ['scripts/demo.mjs', '--exit'], { cwd: root, env }));
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    // A failed step is named at the end of the demo's output: show it, as the assertions below only say what is missing.
    if (code !== 0) console.error(`the demo exited with ${code}; its output ends:\n${output.slice(-6_000)}`);

    expect(output).toContain('buyer: 402 Payment Required: 10000 atomic units');
    expect(output).toMatch(/buyer: 200 OK: settled in 0x[0-9a-f]{64} on eip155:31337/);
    expect(output).toMatch(/demo: transaction 0x[0-9a-f]{64}: success in block \d+/);
    expect(output).toContain('merchant USDC 0.000000 → 0.010000');
    expect(output).toMatch(/demo: MPP evm: paid, Payment-Receipt reference 0x[0-9a-f]{64}/);
    expect(output).toMatch(/demo: MPP stripe: paid, Payment-Receipt reference pi_\w+/);
    expect(output).toMatch(/demo: gas per paid call: \d+ with batch-settlement \(3 transactions for 20 calls\) vs \d+ with exact \(20 transactions\)/);
    expect(output).toMatch(/demo: MPP session: 24 hours delivered, spent 24000, closed on chain in 0x[0-9a-f]{64}/);
    expect(output).toContain("demo: MPP session: the facilitator's channel: closed, deposit 30000, accepted 24000, spent 24000, settled on chain 24000");
    expect(output).toMatch(
      /demo: MPP session: the ledger's books of the channel: \{[^\n]*"state":"closed","deposit":"30000","accepted":"24000","spent":"24000","settled":"24000","refunded":"6000"/,
    );
    expect(output).toMatch(/demo: the ledger's books of the batch channel: deposit 50000, claimed 20000, settled 20000, refunded 30000, held 0/);
    // the MPP session channel and the x402 batch channel
    expect(output).toMatch(/recon: Checked\s+2 payment channels against the escrow/);
    expect(output).toMatch(/demo: A2A: task [0-9a-f-]{36} TASK_STATE_COMPLETED, paid in 0x[0-9a-f]{64} \(eip155:31337\)/);
    expect(output).toContain('demo: facilitator: 5 confirmed payments of this merchant');
    expect(output).toMatch(/demo: ledger: revenue 50000 atomic units of eip155:31337\/0x[0-9a-f]{40}/);
    expect(output).toMatch(/recon: Rows\s+6: 6 matched, 0 pending, 0 breaks/);
    expect(output).toMatch(/demo: open the HTML report in a browser: http:\/\/127\.0\.0\.1:\d+\/reconciliations\/[0-9a-f-]{36}\/report\?token=\S+/);
    // subscriptions: evm at the merchant agent, stripe through Stripe Billing; a renewal; both kinds of cancel; the books
    expect(output).toMatch(/demo: evm-1: 200, Payment-Receipt subscriptionId \S+, period 0 paid in 0x[0-9a-f]{64}/);
    expect(output).toContain("demo: evm-1: a later call with only the payer's signed proof: 200, served without paying");
    expect(output).toMatch(/demo: stripe: subscriptionId \S+, Stripe subscription sub_\w+, first invoice in_\w+ paid/);
    expect(output.match(/demo: renewed: \S+ \((evm|stripe), [\w-]+\): active, periods paid \[0, 1\]/g)).toHaveLength(3);
    expect(output).toMatch(/demo: evm-2: \S+ \(evm, briefing\): canceled, periods paid \[0, 1\], cancel immediately confirmed, refund \d+ refunded/);
    expect(output).toMatch(/demo: stripe: \S+ \(stripe, briefing-card\): canceled, periods paid \[0, 1\], cancel immediately confirmed, refund \d+ refunded/);
    expect(output).toMatch(/demo: evm-1: \S+ \(evm, briefing\): canceled, periods paid \[0, 1\], cancel period_end confirmed/);
    expect(output).toMatch(/recon: Rows\s+16: 16 matched, 0 pending, 0 breaks/);
    expect(output).toContain('demo: all steps passed');
    expect(code).toBe(0);
  }, 600_000);
});
