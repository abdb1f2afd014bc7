import fc from 'fast-check';
import type { Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { PrismaService } from '@mp/db';
import { signAuthorization, testChain, v2Body, v2Requirements } from '../../../test/support/chain';
import { startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';
import { rawPost } from '../../../test/support/raw-http';

/** Hostile and malformed input: a clear 4xx naming the problem (or the protocol's invalid answer), never a 500, nothing written. */
describe('facilitator input handling', () => {
  const { manifest } = testChain();
  const usdc = manifest.tokens.usdc;
  let facilitator: RunningFacilitator;
  let db: PrismaService;
  let valid: ReturnType<typeof v2Body>;
  let rowsBefore: number;

  const countRows = async () => Number((await db.$queryRawUnsafe<{ n: bigint }[]>('SELECT count(*) AS n FROM facilitator.payments'))[0].n);

  beforeAll(async () => {
    facilitator = await startFacilitator();
    db = facilitator.app.get(PrismaService);
    // A payer with no funds: even a mutation that stays valid cannot settle, so any row written would be a bug.
    const payload = await signAuthorization(privateKeyToAccount(generatePrivateKey()), usdc, manifest.chainId, {
      to: manifest.accounts.merchant.address as Address,
      value: 5_000n,
    });
    valid = v2Body(payload, v2Requirements(manifest, usdc, 5_000n));
    rowsBefore = await countRows();
  });
  afterAll(() => facilitator?.close());

  const send = (path: string, body: string, contentType = 'application/json') =>
    fetch(`${facilitator.url}${path}`, { method: 'POST', headers: { 'content-type': contentType }, body }).then(async (r) => ({
      status: r.status,
      type: r.headers.get('content-type'),
      body: (await r.json().catch(() => undefined)) as any,
    }));

  it.each(['/verify', '/settle'])('%s: malformed JSON is a 400 problem', async (path) => {
    const r = await send(path, '{"x402Version": 2,');
    expect(r.status).toBe(400);
    expect(r.type).toContain('application/problem+json');
    expect(r.body).toMatchObject({ status: 400, code: 'malformed_json', type: 'urn:problem:malformed_json' });
  });

  it('a body over 64 KiB is refused with 413 before it is read in full', async () => {
    const r = await send('/settle', JSON.stringify({ ...valid, padding: 'x'.repeat(64 * 1024) }));
    expect(r.status).toBe(413);
    expect(r.body).toMatchObject({ code: 'payload_too_large' });
  });

  it('a body that is not JSON is a 415', async () => {
    const r = await send('/verify', 'x402Version=2', 'application/x-www-form-urlencoded');
    expect(r.status).toBe(415);
    expect(r.body).toMatchObject({ code: 'unsupported_media_type' });
  });

  it('an unknown field is named', async () => {
    const r = await send('/settle', JSON.stringify({ ...valid, paymentRequirements: { ...valid.paymentRequirements, discount: '50%' } }));
    expect(r.status).toBe(400);
    expect(r.body.invalidParams).toContainEqual({ name: 'paymentRequirements', reason: expect.stringContaining('discount') });
  });

  it('missing fields and wrong types are named', async () => {
    const { amount: _amount, ...withoutAmount } = valid.paymentRequirements;
    const r = await send('/verify', JSON.stringify({ ...valid, paymentRequirements: { ...withoutAmount, maxTimeoutSeconds: '60' } }));
    expect(r.status).toBe(400);
    expect(r.body.invalidParams).toEqual(
      expect.arrayContaining([
        { name: 'paymentRequirements.amount', reason: 'is required' },
        { name: 'paymentRequirements.maxTimeoutSeconds', reason: expect.any(String) },
      ]),
    );
  });

  it('a malformed EIP-3009 payload is named down to the field', async () => {
    const payload = { ...valid.paymentPayload.payload, authorization: { ...valid.paymentPayload.payload.authorization, nonce: '0x1234', value: '1.5' } };
    const r = await send('/settle', JSON.stringify({ ...valid, paymentPayload: { ...valid.paymentPayload, payload } }));
    expect(r.status).toBe(400);
    expect(r.body.invalidParams.map((p: { name: string }) => p.name).sort()).toEqual([
      'paymentPayload.payload.authorization.nonce',
      'paymentPayload.payload.authorization.value',
    ]);
  });

  it('unknown routes are problem+json 404s', async () => {
    const r = await fetch(`${facilitator.url}/nope`);
    expect(r.status).toBe(404);
    expect(r.headers.get('content-type')).toContain('application/problem+json');
  });

  it('random bodies never produce a 5xx, and every answer is the protocol shape or a problem', async () => {
    const mutatedLeaf = fc.oneof(fc.jsonValue(), fc.constant(undefined), fc.string(), fc.integer(), fc.constant('0x'), fc.constant('-1'));
    const paths = [
      ['x402Version'],
      ['paymentPayload', 'x402Version'],
      ['paymentPayload', 'accepted', 'amount'],
      ['paymentPayload', 'payload', 'signature'],
      ['paymentPayload', 'payload', 'authorization', 'from'],
      ['paymentPayload', 'payload', 'authorization', 'validBefore'],
      ['paymentRequirements', 'network'],
      ['paymentRequirements', 'asset'],
      ['paymentRequirements', 'extra'],
      ['paymentPayload', 'extensions'],
    ];
    const mutated = fc.tuple(fc.constantFrom(...paths), mutatedLeaf).map(([path, leaf]) => {
      const copy = JSON.parse(JSON.stringify(valid));
      let node = copy;
      for (const key of path.slice(0, -1)) node = node[key];
      node[path[path.length - 1]] = leaf;
      return JSON.stringify(copy);
    });
    const garbage = fc.oneof(
      fc.jsonValue().map((v) => JSON.stringify(v)),
      fc.string(),
      mutated,
    );
    await fc.assert(
      fc.asyncProperty(garbage, fc.constantFrom('/verify', '/settle'), async (body, path) => {
        const r = await send(path, body);
        expect(r.status).toBeLessThan(500);
        if (r.status === 200) expect(r.body).toSatisfy((b: object) => 'isValid' in b || 'success' in b);
        else expect(r.body).toMatchObject({ status: r.status, code: expect.any(String), detail: expect.any(String) });
      }),
      { numRuns: 250 },
    );
  });

  /** The valid body with `nested` (raw JSON text: building it as a value would itself overflow JSON.stringify) at `path`. */
  const withNested = (path: string[], nested: string) => {
    const copy = JSON.parse(JSON.stringify(valid));
    let node = copy;
    for (const key of path.slice(0, -1)) node = node[key];
    node[path[path.length - 1]] = '__nested__';
    return JSON.stringify(copy).replace('"__nested__"', nested);
  };
  const nestedJson = (kind: 'array' | 'object', depth: number) =>
    kind === 'array' ? `${'['.repeat(depth)}${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
  const nestingPaths = [
    ['paymentPayload', 'payload', 'authorization', 'nonce'],
    ['paymentPayload', 'payload', 'authorization'],
    ['paymentRequirements', 'extra'],
    ['paymentPayload', 'accepted', 'extra'],
    ['paymentPayload', 'extensions'],
  ];

  it('JSON nested deeper than 64 levels is a 400 naming the depth, wherever it sits (arrays up to 20k deep, objects up to 9k)', async () => {
    const deep = fc.oneof(
      fc.record({ kind: fc.constant('array' as const), depth: fc.oneof(fc.integer({ min: 65, max: 200 }), fc.integer({ min: 200, max: 20_000 })) }),
      fc.record({ kind: fc.constant('object' as const), depth: fc.oneof(fc.integer({ min: 65, max: 200 }), fc.integer({ min: 200, max: 9_000 })) }),
    );
    await fc.assert(
      fc.asyncProperty(deep, fc.constantFrom(...nestingPaths), fc.constantFrom('/verify', '/settle'), async ({ kind, depth }, path, endpoint) => {
        const r = await send(endpoint, withNested(path, nestedJson(kind, depth)));
        expect(r.status, 'never a 5xx').toBeLessThan(500);
        expect(r.status).toBe(400);
        expect(r.type).toContain('application/problem+json');
        expect(r.body).toMatchObject({ status: 400, code: 'json_too_deep', detail: expect.stringContaining('64') });
      }),
      { numRuns: 60 },
    );
  });

  it('nesting within the bound reaches the schema, which answers it (never a 5xx)', async () => {
    for (const path of nestingPaths) {
      for (const kind of ['array', 'object'] as const) {
        const r = await send('/verify', withNested(path, nestedJson(kind, 50)));
        expect(r.status).toBeLessThan(500);
        expect(r.body?.code).not.toBe('json_too_deep');
      }
    }
  });

  it('every body of 2-8 MiB gets its 413 answer: chunked or not, padded or behind leading whitespace, read during or after the upload', async () => {
    const oversized = fc.record({
      size: fc.integer({ min: 2 * 1024 * 1024, max: 8 * 1024 * 1024 }),
      chunked: fc.boolean(),
      shape: fc.constantFrom('leading-whitespace', 'padded'),
      writeBytes: fc.constantFrom(1024, 16 * 1024, 64 * 1024, 1024 * 1024),
      readAfterWriting: fc.boolean(),
      endpoint: fc.constantFrom('/verify', '/settle'),
    });
    const json = JSON.stringify(valid);
    await fc.assert(
      fc.asyncProperty(oversized, async ({ size, chunked, shape, writeBytes, readAfterWriting, endpoint }) => {
        const text =
          shape === 'leading-whitespace' ? `${' '.repeat(size - json.length)}${json}` : JSON.stringify({ ...valid, padding: 'x'.repeat(size - json.length) });
        const r = await rawPost(facilitator.url, endpoint, Buffer.from(text), { chunked, writeBytes, readAfterWriting });
        expect(r, `no answer (${r.error ?? 'closed'})`).toMatchObject({ status: 413 });
        expect(JSON.parse(r.body)).toMatchObject({ status: 413, code: 'payload_too_large' });
      }),
      { numRuns: 40 },
    );
  });

  it('none of this wrote anything', async () => {
    expect(await countRows()).toBe(rowsBefore);
  });
});
