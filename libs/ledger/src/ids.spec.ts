import fc from 'fast-check';
import { MAX_ID, parseLedgerId, ZERO_ID } from './ids';
import { normalizeAsset } from './asset';

describe('ledger ids', () => {
  it('accepts UUIDs in any case and returns them lowercase', () => {
    expect(parseLedgerId('0F8FAD5B-D9CB-469F-A165-70867728950E')).toBe('0f8fad5b-d9cb-469f-a165-70867728950e');
  });

  it('maps a decimal 128-bit integer to the UUID of the same bits', () => {
    expect(parseLedgerId('0')).toBe(ZERO_ID);
    expect(parseLedgerId('1')).toBe('00000000-0000-0000-0000-000000000001');
    expect(parseLedgerId(((1n << 128n) - 1n).toString())).toBe(MAX_ID);
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: (1n << 128n) - 1n }), (n) => {
        expect(BigInt(`0x${parseLedgerId(n.toString())!.replaceAll('-', '')}`)).toBe(n);
      }),
    );
  });

  it.each([undefined, 7, '', '-1', '01', '1.5', (1n << 128n).toString(), 'not-a-uuid', '0f8fad5bd9cb469fa16570867728950e'])('refuses %j', (input) => {
    expect(parseLedgerId(input)).toBeUndefined();
  });
});

describe('assets', () => {
  it('lowercases 0x-hex tokens and keeps everything else as written', () => {
    expect(normalizeAsset('eip155:8453/0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913')).toBe('eip155:8453/0x833589fcd6edb6e08f4c7c32d4f71b54bda02913');
    expect(normalizeAsset('stripe/usd')).toBe('stripe/usd');
    expect(normalizeAsset('solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp/EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v')).toBe(
      'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp/EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v',
    );
  });

  it.each([undefined, '', 'usd', '/usd', 'stripe/', 'Stripe/usd', 'stripe/us d', 'stripe/usd/x', `a/${'x'.repeat(129)}`])('refuses %j', (input) => {
    expect(normalizeAsset(input)).toBeUndefined();
  });
});
