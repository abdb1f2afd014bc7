/**
 * x402 HTTP headers carry base64 (standard alphabet) of UTF-8 JSON: PAYMENT-REQUIRED, PAYMENT-SIGNATURE and
 * PAYMENT-RESPONSE in v2, X-PAYMENT and X-PAYMENT-RESPONSE in v1.
 */
export const X402Header = {
  paymentRequired: 'PAYMENT-REQUIRED',
  paymentSignature: 'PAYMENT-SIGNATURE',
  paymentResponse: 'PAYMENT-RESPONSE',
  v1Payment: 'X-PAYMENT',
  v1PaymentResponse: 'X-PAYMENT-RESPONSE',
} as const;

export class HeaderDecodeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'HeaderDecodeError';
  }
}

export function encodeHeader(value: unknown): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64');
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

export function decodeHeader(header: string): unknown {
  const text = header.trim();
  if (text.length === 0 || text.length % 4 !== 0 || !BASE64.test(text)) throw new HeaderDecodeError('header is not base64');
  let json: string;
  try {
    json = new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(text, 'base64'));
  } catch {
    throw new HeaderDecodeError('header is not base64 of UTF-8 text');
  }
  try {
    return JSON.parse(json);
  } catch {
    throw new HeaderDecodeError('header is not base64 of JSON');
  }
}
