import { randomBytes } from 'node:crypto';

import { Test } from '@nestjs/testing';
import pg from 'pg';

import { dropDatabase, migrateDeploy } from '../../../scripts/lib/database.mjs';
import { DbModule, fromDbDecimal, isUniqueViolation, PaymentState, Prisma, PrismaService, toDbDecimal, withTransaction } from './index';

const BASE_URL = process.env.DATABASE_URL || 'postgresql://postgres@127.0.0.1:5432/machine_payments_test';
const UINT256_MAX = (1n << 256n) - 1n; // 78 decimal digits

const hex = (bytes: number) => `0x${randomBytes(bytes).toString('hex')}`;

function paymentInput(overrides: Partial<Prisma.PaymentCreateInput> = {}): Prisma.PaymentCreateInput {
  return {
    network: 'eip155:31337',
    asset: hex(20),
    payer: hex(20),
    authorizationNonce: hex(32),
    payTo: hex(20),
    amount: toDbDecimal(UINT256_MAX),
    validAfter: toDbDecimal(0n),
    validBefore: toDbDecimal(1_900_000_000n),
    scheme: 'exact',
    x402Version: 2,
    payloadHash: randomBytes(32).toString('hex'),
    state: PaymentState.verified,
    ...overrides,
  };
}

describe('PrismaService against a freshly migrated database', () => {
  const u = new URL(BASE_URL);
  u.pathname = `/mp_migrate_test_${randomBytes(5).toString('hex')}`;
  const url = u.toString();
  let prisma: PrismaService;
  let close: () => Promise<void>;

  beforeAll(async () => {
    await migrateDeploy({ databaseUrl: url, quiet: true });
    const moduleRef = await Test.createTestingModule({ imports: [DbModule.forRoot({ url, poolSize: 4 })] }).compile();
    await moduleRef.init();
    prisma = moduleRef.get(PrismaService);
    close = () => moduleRef.close();
  });

  afterAll(async () => {
    await close?.();
    await dropDatabase(url);
  });

  it('is provided by DbModule with the configured pool size', () => {
    // PrismaClient's constructor returns a Proxy whose prototype reads as Object.prototype, so
    // `instanceof PrismaService` is false (and printing it overflows the stack); check by shape.
    expect(typeof prisma.onModuleInit).toBe('function');
    expect(typeof prisma.payment.create).toBe('function');
    expect(prisma.poolSize).toBe(4);
  });

  it('opens its pool on module init and closes it on module destroy', async () => {
    const applicationName = `mp-db-spec-${randomBytes(3).toString('hex')}`;
    const countConnections = async () => {
      const rows = await prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = ${applicationName}`;
      return rows[0].n;
    };
    const moduleRef = await Test.createTestingModule({ imports: [DbModule.forRoot({ url, poolSize: 2, applicationName })] }).compile();
    await moduleRef.init();
    const other = moduleRef.get(PrismaService);
    await other.$queryRaw`SELECT 1`;
    expect(await countConnections()).toBeGreaterThan(0);
    await moduleRef.close();
    for (let i = 0; i < 50 && (await countConnections()) > 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(await countConnections()).toBe(0);
  });

  it('runs named statements on a few connections of its own, prepared once per connection, closed with the client', async () => {
    const applicationName = `mp-db-prepared-${randomBytes(3).toString('hex')}`;
    const connections = async () =>
      (await prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = ${applicationName}`)[0].n;
    const moduleRef = await Test.createTestingModule({ imports: [DbModule.forRoot({ url, poolSize: 2, applicationName })] }).compile();
    await moduleRef.init();
    const other = moduleRef.get(PrismaService);
    const open = await connections();
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) => other.prepared<{ n: number; s: string }>('spec_echo', 'SELECT $1::int AS n, $2::text AS s', [i, `v${i}`])),
    );
    expect(answers.map(([row]) => row)).toEqual(Array.from({ length: 6 }, (_, i) => ({ n: i, s: `v${i}` })));
    // its own connections, at most the pool size
    const used = (await connections()) - open;
    expect(used).toBeGreaterThan(0);
    expect(used).toBeLessThanOrEqual(2);
    // prepared on each connection it ran on
    const prepared = await other.prepared<{ n: number }>('spec_prepared', `SELECT count(*)::int AS n FROM pg_prepared_statements WHERE name = 'spec_echo'`, []);
    expect(prepared[0].n).toBe(1);
    await moduleRef.close();
    for (let i = 0; i < 50 && (await connections()) > 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(await connections()).toBe(0);
  });

  it('stores a 78-digit amount and reads it back exactly', async () => {
    const created = await prisma.payment.create({ data: paymentInput() });
    expect(created.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(created.attempts).toBe(0);
    expect(created.updatedAt).toBeInstanceOf(Date);

    const read = await prisma.payment.findUniqueOrThrow({ where: { id: created.id } });
    expect(read.amount.toFixed()).toBe(UINT256_MAX.toString());
    expect(read.amount.toFixed()).toHaveLength(78);
    expect(fromDbDecimal(read.amount)).toBe(UINT256_MAX);
    expect(read.state).toBe('verified');

    const [raw] = await prisma.$queryRaw<{ amount: string }[]>`SELECT amount::text AS amount FROM facilitator.payments WHERE id = ${created.id}::uuid`;
    expect(raw.amount).toBe(UINT256_MAX.toString());
  });

  it('rejects a second payment with the same (network, asset, payer, authorizationNonce) as a unique violation', async () => {
    const first = paymentInput();
    await prisma.payment.create({ data: first });
    const err = await prisma.payment
      .create({ data: { ...paymentInput(), network: first.network, asset: first.asset, payer: first.payer, authorizationNonce: first.authorizationNonce } })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Prisma.PrismaClientKnownRequestError);
    expect((err as Prisma.PrismaClientKnownRequestError).code).toBe('P2002');
    expect(isUniqueViolation(err)).toBe(true);

    // same nonce, different payer: allowed
    await expect(prisma.payment.create({ data: { ...paymentInput(), authorizationNonce: first.authorizationNonce } })).resolves.toBeDefined();
  });

  it('recognizes unique violations from raw SQL and from plain pg, and nothing else', async () => {
    const p = await prisma.payment.create({ data: paymentInput() });
    const rawErr =
      await prisma.$executeRaw`INSERT INTO facilitator.payment_idempotency_keys (key, payload_hash, payment_id) VALUES ('k-raw-duplicate-0001', 'h', ${p.id}::uuid), ('k-raw-duplicate-0001', 'h', ${p.id}::uuid)`.catch(
        (e: unknown) => e,
      );
    expect(isUniqueViolation(rawErr)).toBe(true);

    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const pgErr = await client.query(`SELECT 1 FROM (VALUES (1)) v(x) WHERE x = 1/0`).catch((e: unknown) => e);
      expect(isUniqueViolation(pgErr)).toBe(false);
      await client.query(`INSERT INTO facilitator.payment_idempotency_keys (key, payload_hash) VALUES ('k-pg-duplicate-00001', 'h')`);
      const dupErr = await client
        .query(`INSERT INTO facilitator.payment_idempotency_keys (key, payload_hash) VALUES ('k-pg-duplicate-00001', 'h')`)
        .catch((e: unknown) => e);
      expect((dupErr as { code?: string }).code).toBe('23505');
      expect(isUniqueViolation(dupErr)).toBe(true);
    } finally {
      await client.end();
    }

    const fkErr = await prisma.paymentEvent
      .create({ data: { paymentId: '00000000-0000-4000-8000-000000000000', type: 'payment.verified', data: {} } })
      .catch((e: unknown) => e);
    expect(fkErr).toBeInstanceOf(Error);
    expect(isUniqueViolation(fkErr)).toBe(false);
    expect(isUniqueViolation(new Error('boom'))).toBe(false);
  });

  it('writes a state transition and its event in one transaction, and rolls both back on error', async () => {
    const p = await prisma.payment.create({ data: paymentInput() });

    await withTransaction(prisma, async (tx) => {
      await tx.payment.update({ where: { id: p.id }, data: { state: PaymentState.submitted } });
      await tx.paymentEvent.create({ data: { paymentId: p.id, type: 'payment.submitted', data: { amount: UINT256_MAX.toString() } } });
    });

    await expect(
      withTransaction(prisma, async (tx) => {
        await tx.payment.update({ where: { id: p.id }, data: { state: PaymentState.failed } });
        await tx.paymentEvent.create({ data: { paymentId: p.id, type: 'payment.failed', data: {} } });
        throw new Error('abort');
      }),
    ).rejects.toThrow('abort');

    const after = await prisma.payment.findUniqueOrThrow({ where: { id: p.id }, include: { events: true } });
    expect(after.state).toBe('submitted');
    expect(after.events.map((e) => e.type)).toEqual(['payment.submitted']);
    expect(typeof after.events[0].id).toBe('bigint');
    expect(after.events[0].publishedAt).toBeNull();
    expect(after.events[0].data).toEqual({ amount: UINT256_MAX.toString() });
  });
});
