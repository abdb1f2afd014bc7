import { randomBytes } from 'node:crypto';
import { parseSealingKeys, Sealer, UnsealError } from './sealing';

const material = () => randomBytes(32).toString('base64');

describe('sealing keys (SUBSCRIPTION_SEALING_KEYS)', () => {
  it('reads <id>:<base64 32 bytes>, in order: the first seals', () => {
    const [a, b] = [material(), material()];
    const { keys, problems } = parseSealingKeys(` k2:${a} , k1:${b}`);
    expect(problems).toEqual([]);
    expect(keys.map((k) => k.id)).toEqual(['k2', 'k1']);
    expect(keys[0]!.key.equals(Buffer.from(a, 'base64'))).toBe(true);
    expect(parseSealingKeys(undefined)).toEqual({ keys: [], problems: [] });
  });

  it.each([
    ['no id', material(), 'entry 1 must be <id>:<base64 key>'],
    ['a short key', `k1:${randomBytes(16).toString('base64')}`, 'key "k1" must be 32 bytes'],
    ['not base64', 'k1:not*base64', 'key "k1" must be 32 bytes'],
    ['a bad id', `k 1:${material()}`, 'entry 1'],
    ['an id twice', `k1:${material()},k1:${material()}`, 'key id "k1" appears twice'],
  ])('refuses %s, without printing the key', (_name, value, problem) => {
    const { problems } = parseSealingKeys(value);
    expect(problems.join('; ')).toContain(problem);
    const secret = value.split(':')[1] ?? value;
    expect(problems.join('; ')).not.toContain(secret);
  });
});

describe('Sealer (AES-256-GCM)', () => {
  const signature = Buffer.from(`${'ab'.repeat(64)}1b`, 'hex');
  const row = 'facilitator.subscription_authorizations|sub_1|3|0x01';

  it('seals to iv | tag | ciphertext under the first key, not the plaintext, and differently each time', () => {
    const sealer = new Sealer(parseSealingKeys(`k1:${material()}`).keys);
    const one = sealer.seal(signature, row);
    const two = sealer.seal(signature, row);
    expect(one.keyId).toBe('k1');
    expect(one.sealed).toHaveLength(12 + 16 + signature.length);
    expect(one.sealed.toString('hex')).not.toContain(signature.toString('hex').slice(0, 16));
    expect(one.sealed.equals(two.sealed)).toBe(false);
    expect(sealer.open(one.sealed, one.keyId, row).equals(signature)).toBe(true);
  });

  it('refuses a tampered value, one moved to another row, and an unknown key', () => {
    const sealer = new Sealer(parseSealingKeys(`k1:${material()}`).keys);
    const { sealed } = sealer.seal(signature, row);
    const tampered = Buffer.from(sealed);
    tampered[tampered.length - 1]! ^= 1;
    expect(() => sealer.open(tampered, 'k1', row)).toThrow(UnsealError);
    expect(() => sealer.open(sealed, 'k1', row.replace('|3|', '|4|'))).toThrow(/moved from another row/);
    expect(() => sealer.open(sealed, 'k0', row)).toThrow(/not in SUBSCRIPTION_SEALING_KEYS/);
  });

  it('rotation: with the new key first and the old one after, old values open and new ones are sealed with the new key', () => {
    const [oldKey, newKey] = [material(), material()];
    const before = new Sealer(parseSealingKeys(`k1:${oldKey}`).keys);
    const sealedOld = before.seal(signature, row);
    const during = new Sealer(parseSealingKeys(`k2:${newKey},k1:${oldKey}`).keys);
    expect(during.open(sealedOld.sealed, 'k1', row).equals(signature)).toBe(true);
    const resealed = during.seal(during.open(sealedOld.sealed, 'k1', row), row);
    expect(resealed.keyId).toBe('k2');
    const after = new Sealer(parseSealingKeys(`k2:${newKey}`).keys);
    expect(after.open(resealed.sealed, 'k2', row).equals(signature)).toBe(true);
    expect(() => after.open(sealedOld.sealed, 'k1', row)).toThrow(UnsealError);
  });
});
