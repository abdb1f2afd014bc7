import fc from 'fast-check';
import { getAddress } from 'viem';
import type { z } from 'zod';
import { decodePaymentRequest } from './request';
import {
  exactEvmEip3009PayloadSchema,
  paymentPayloadV1Schema,
  paymentPayloadV2Schema,
  paymentRequirementsV1Schema,
  paymentRequirementsV2Schema,
} from './schemas';
import { mutated, odd } from '../../../test/support/mutations';
import { wellFormedEip3009, wellFormedV1, wellFormedV2 } from './well-formed';

// The hand-written checks may leave any input to the schemas, but must never take one the schemas would refuse or
// give back differently: each is held against its schema over valid inputs and over those inputs mutated.

const address = fc.uint8Array({ minLength: 20, maxLength: 20 }).map((b) => getAddress(`0x${Buffer.from(b).toString('hex')}`));
const atomic = fc.oneof(fc.constantFrom('0', '1', (2n ** 256n - 1n).toString()), fc.bigInt({ min: 0n, max: 2n ** 256n - 1n }).map(String));
const hexBytes = (min: number, max: number) => fc.uint8Array({ minLength: min, maxLength: max }).map((b) => `0x${Buffer.from(b).toString('hex')}`);
const text = (max: number) => fc.string({ maxLength: max });
const nonEmpty = fc.string({ minLength: 1, maxLength: 40 });
const openObject = fc.dictionary(
  fc.string().filter((k) => k !== '__proto__'),
  fc.jsonValue(),
  { noNullPrototype: true },
);

const requirementsV2 = fc.record(
  {
    scheme: nonEmpty,
    network: fc.constantFrom('eip155:8453', 'eip155:84532', 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp'),
    amount: atomic,
    asset: fc.oneof(address, nonEmpty),
    payTo: fc.oneof(address, nonEmpty),
    maxTimeoutSeconds: fc.integer({ min: 0, max: 31_536_000 }),
    extra: fc.oneof(fc.constant(null), openObject),
  },
  { requiredKeys: ['scheme', 'network', 'amount', 'asset', 'payTo', 'maxTimeoutSeconds'], noNullPrototype: true },
);
const resource = fc.record(
  {
    url: nonEmpty,
    description: fc.oneof(fc.constant(null), text(60)),
    mimeType: text(20),
    serviceName: text(32),
    tags: fc.array(text(32), { maxLength: 5 }),
    iconUrl: text(60),
  },
  { requiredKeys: ['url'], noNullPrototype: true },
);
const payloadV2 = fc.record(
  { x402Version: fc.constant(2), resource: fc.oneof(fc.constant(null), resource), accepted: requirementsV2, payload: openObject, extensions: openObject },
  { requiredKeys: ['x402Version', 'accepted', 'payload'], noNullPrototype: true },
);
const requirementsV1 = fc.record(
  {
    scheme: nonEmpty,
    network: nonEmpty,
    maxAmountRequired: atomic,
    resource: nonEmpty,
    description: text(80),
    mimeType: fc.oneof(fc.constant(null), text(20)),
    outputSchema: openObject,
    payTo: nonEmpty,
    maxTimeoutSeconds: fc.integer({ min: 0, max: 31_536_000 }),
    asset: nonEmpty,
    extra: openObject,
  },
  { requiredKeys: ['scheme', 'network', 'maxAmountRequired', 'resource', 'description', 'payTo', 'maxTimeoutSeconds', 'asset'], noNullPrototype: true },
);
const payloadV1 = fc.record({ x402Version: fc.constant(1), scheme: nonEmpty, network: nonEmpty, payload: openObject }, { noNullPrototype: true });
const eip3009 = fc.record(
  {
    signature: hexBytes(1, 100),
    authorization: fc.record(
      {
        from: fc.oneof(
          address,
          address.map((a) => a.toLowerCase()),
        ),
        to: address,
        value: atomic,
        validAfter: atomic,
        validBefore: atomic,
        nonce: hexBytes(32, 32),
      },
      { noNullPrototype: true },
    ),
  },
  { noNullPrototype: true },
);

function agrees(schema: z.ZodType, input: unknown, taken: unknown): void {
  if (taken === undefined) return;
  const parsed = schema.safeParse(input);
  expect(parsed.success).toBe(true);
  expect(taken).toBe(input);
  expect(parsed.data).toStrictEqual(input);
}

type Part = Record<string, unknown>;

/** Each version's pair of parts, with its hand check and the schemas it stands in for. */
const versions: {
  name: string;
  parts: fc.Arbitrary<{ payload: Part; requirements: Part }>;
  check: (payload: Part, requirements: Part) => readonly [unknown, unknown] | undefined;
  schemas: readonly [z.ZodType, z.ZodType];
}[] = [
  {
    name: 'v2',
    parts: fc.record({ payload: payloadV2, requirements: requirementsV2 }) as fc.Arbitrary<{ payload: Part; requirements: Part }>,
    check: wellFormedV2,
    schemas: [paymentPayloadV2Schema, paymentRequirementsV2Schema],
  },
  {
    name: 'v1',
    parts: fc.record({ payload: payloadV1, requirements: requirementsV1 }) as fc.Arbitrary<{ payload: Part; requirements: Part }>,
    check: wellFormedV1,
    schemas: [paymentPayloadV1Schema, paymentRequirementsV1Schema],
  },
];

describe('well-formed checks by hand', () => {
  for (const { name, parts, check, schemas } of versions)
    it(`takes the valid ${name} requests, as their schemas give them back`, () => {
      fc.assert(
        fc.property(parts, ({ payload, requirements }) => {
          const taken = check(payload, requirements);
          expect(taken).toEqual([payload, requirements]);
          agrees(schemas[0], payload, taken![0]);
          agrees(schemas[1], requirements, taken![1]);
        }),
        { numRuns: 300 },
      );
    });

  for (const { name, parts, check, schemas } of versions)
    it(`never takes a ${name} request its schemas refuse or would change`, () => {
      fc.assert(
        fc.property(mutated(parts), (input) => {
          const { payload, requirements } = input as { payload: Part; requirements: Part };
          const taken = check(payload, requirements);
          agrees(schemas[0], payload, taken?.[0]);
          agrees(schemas[1], requirements, taken?.[1]);
        }),
        { numRuns: 1000 },
      );
    });

  it('takes the valid EIP-3009 payloads and never one their schema refuses or would change', () => {
    fc.assert(
      fc.property(eip3009, (payload) => {
        const taken = wellFormedEip3009(payload);
        expect(taken).toBe(payload);
        agrees(exactEvmEip3009PayloadSchema, payload, taken);
      }),
      { numRuns: 300 },
    );
    fc.assert(
      fc.property(mutated(eip3009), (payload) => {
        agrees(exactEvmEip3009PayloadSchema, payload, wellFormedEip3009(payload as Record<string, unknown>));
      }),
      { numRuns: 1000 },
    );
  });

  it('leaves a request the envelope refuses to the schemas, which name its problems', () => {
    fc.assert(
      fc.property(payloadV2, requirementsV2, odd, (payload, requirements, version) => {
        fc.pre(version !== undefined && version !== 2);
        const body = { x402Version: version, paymentPayload: payload, paymentRequirements: requirements };
        const result = decodePaymentRequest(body);
        expect(result.ok).toBe(false);
      }),
      { numRuns: 200 },
    );
    const valid = {
      x402Version: 2,
      paymentPayload: {
        x402Version: 2,
        accepted: { scheme: 'exact', network: 'eip155:8453', amount: '1', asset: 'a', payTo: 'b', maxTimeoutSeconds: 1 },
        payload: {},
      },
    };
    const result = decodePaymentRequest({ ...valid, paymentRequirements: valid.paymentPayload.accepted, extra: 1 });
    expect(result).toEqual({ ok: false, kind: 'malformed', issues: [{ field: 'body', message: 'unknown field(s): extra' }] });
  });
});
