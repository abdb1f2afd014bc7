import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/** One AES-256-GCM key of SUBSCRIPTION_SEALING_KEYS, named by the id stored beside what it sealed. */
export interface SealingKey {
  id: string;
  key: Buffer;
}

const KEY_ID = /^[A-Za-z0-9_.-]{1,32}$/;
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * `SUBSCRIPTION_SEALING_KEYS=<id>:<base64 of 32 bytes>,…`: the first key seals, every key opens. Problems are named by
 * position and id, never by the key material.
 */
export function parseSealingKeys(value: string | undefined): { keys: SealingKey[]; problems: string[] } {
  const entries = (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const problems: string[] = [];
  const keys: SealingKey[] = [];
  entries.forEach((entry, index) => {
    const colon = entry.indexOf(':');
    const id = colon < 0 ? '' : entry.slice(0, colon);
    const material = colon < 0 ? '' : entry.slice(colon + 1);
    if (!KEY_ID.test(id)) {
      problems.push(`SUBSCRIPTION_SEALING_KEYS: entry ${index + 1} must be <id>:<base64 key>, the id 1-32 of [A-Za-z0-9_.-]`);
      return;
    }
    const key = /^[A-Za-z0-9+/]+={0,2}$/.test(material) ? Buffer.from(material, 'base64') : Buffer.alloc(0);
    if (key.length !== 32) {
      problems.push(`SUBSCRIPTION_SEALING_KEYS: key "${id}" must be 32 bytes in base64 (openssl rand -base64 32)`);
      return;
    }
    if (keys.some((k) => k.id === id)) {
      problems.push(`SUBSCRIPTION_SEALING_KEYS: key id "${id}" appears twice`);
      return;
    }
    keys.push({ id, key });
  });
  return { keys, problems };
}

export class UnsealError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnsealError';
  }
}

/**
 * AES-256-GCM over what must not be readable at rest (a pre-signed authorization's signature). The associated data
 * binds a sealed value to its row (subscription, period, nonce), so a ciphertext copied onto another row does not open.
 * Layout: iv (12) | tag (16) | ciphertext.
 */
export class Sealer {
  constructor(private readonly keys: readonly SealingKey[]) {
    if (keys.length === 0) throw new Error('a Sealer needs at least one key');
  }

  /** The key new values are sealed with. */
  get currentKeyId(): string {
    return this.keys[0]!.id;
  }

  seal(plaintext: Buffer, associatedData: string): { sealed: Buffer; keyId: string } {
    const { id, key } = this.keys[0]!;
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(Buffer.from(associatedData, 'utf8'));
    const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    return { sealed: Buffer.concat([iv, cipher.getAuthTag(), ciphertext]), keyId: id };
  }

  open(sealed: Buffer, keyId: string, associatedData: string): Buffer {
    const entry = this.keys.find((k) => k.id === keyId);
    if (!entry) throw new UnsealError(`sealing key "${keyId}" is not in SUBSCRIPTION_SEALING_KEYS (dropped before its values were sealed again?)`);
    if (sealed.length < IV_BYTES + TAG_BYTES) throw new UnsealError('sealed value is truncated');
    const decipher = createDecipheriv('aes-256-gcm', entry.key, sealed.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(associatedData, 'utf8'));
    decipher.setAuthTag(sealed.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    try {
      return Buffer.concat([decipher.update(sealed.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]);
    } catch {
      throw new UnsealError(`sealed value does not open under key "${keyId}" for this row (tampered, or moved from another row)`);
    }
  }
}
