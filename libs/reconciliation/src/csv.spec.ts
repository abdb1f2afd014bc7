import { csvField, toCsv } from './csv';
import { reconcile } from './reconcile';
import { bookedAs, chainLog, LATER, PERIOD, stripePayment, USDC, WINDOW_MS } from '../test/entries';

describe('toCsv', () => {
  const log = chainLog(1, 0, 1_500_000n);
  const payment = stripePayment('pi_1', 500n, 'chal_1');
  const report = reconcile({
    ledger: [{ ...bookedAs('l,1', log), amount: 1_500_001n }],
    external: [log, payment],
    period: PERIOD,
    pendingWindowMs: WINDOW_MS,
    now: LATER,
  });

  it('writes a header and one CRLF-terminated line per row, amounts as atomic decimal strings', () => {
    const lines = toCsv(report).split('\r\n');
    expect(lines[0]).toBe(
      'row_kind,source,asset,entry_kind,reference,occurred_at,ledger_id,ledger_reference,ledger_state,ledger_amount,ledger_corrections,external_reference,external_amount,difference,duplicate_of,advice,' +
        'asset_symbol,ledger_amount_decimal,external_amount_decimal,difference_decimal,' +
        'subscription_id,subscription_period,subscription_attempt,captured,refunded,' +
        'expected,actual,details',
    );
    expect(lines).toHaveLength(report.rows.length + 2);
    expect(lines.at(-1)).toBe('');
    expect(lines[2]).toContain(',"l,1",');
    expect(lines[2]).toContain(',1500001,,');
    expect(lines[2]).toContain(',1500000,-1,');
  });

  it('puts decimals and the symbol of the asset beside the atomic amounts, and leaves them empty when unknown', () => {
    const described = toCsv(report, [{ asset: USDC, symbol: 'USDC', decimals: 6 }]).split('\r\n');
    const chainLine = described.find((l) => l.includes(',"l,1",'))!;
    // then five empty subscription and over_refund columns, and three of the balance checks
    expect(chainLine.endsWith(',USDC,1.500001,1.5,-0.000001,,,,,,,,')).toBe(true);
    // Stripe currencies are known without being given: 500 cents
    const stripeLine = described.find((l) => l.includes(',pi_1,'))!;
    expect(stripeLine.endsWith(',USD,,5,,,,,,,,,')).toBe(true);
    const undescribed = toCsv(report)
      .split('\r\n')
      .find((l) => l.includes(',"l,1",'))!;
    expect(undescribed.endsWith(',,,,,,,,,,,,')).toBe(true);
  });

  it('quotes fields with quotes, commas or line breaks (RFC 4180) and leaves others bare', () => {
    expect(csvField('plain')).toBe('plain');
    expect(csvField('a,b')).toBe('"a,b"');
    expect(csvField('say "hi"')).toBe('"say ""hi"""');
    expect(csvField('two\nlines')).toBe('"two\nlines"');
    expect(csvField('cr\r')).toBe('"cr\r"');
  });

  it('defuses text a spreadsheet would run as a formula, but not negative amounts', () => {
    const hostile = reconcile({
      ledger: [],
      external: [{ ...payment, reference: '=HYPERLINK("http://x")' }],
      period: PERIOD,
      pendingWindowMs: WINDOW_MS,
      now: LATER,
    });
    const line = toCsv(hostile).split('\r\n')[1];
    expect(line).toContain(`"'=HYPERLINK(""http://x"")"`);
    expect(toCsv(report)).toContain(',-1,');
  });
});
