import { z } from 'zod';
import { decodeBase64UrlText, encodeBase64Url } from './base64url';
import { fail, ok, type Result } from './problems';

/**
 * `Payment-Receipt: base64url(JSON)`, sent only on 2xx (with `Cache-Control: private`).
 * The schema is loose, as in mppx: methods add members (`challengeId`, `intent`, session totals…).
 */
export const receiptSchema = z.looseObject({
  status: z.literal('success'),
  method: z.string(),
  timestamp: z.iso.datetime({ offset: true }),
  reference: z.string(),
  challengeId: z.string().optional(),
  externalId: z.string().optional(),
  subscriptionId: z.string().optional(),
  /** method stripe, intent subscription: the Stripe subscription (sub_...) */
  stripeSubscription: z.string().optional(),
});

export type Receipt = z.infer<typeof receiptSchema>;

export const PAYMENT_RECEIPT_HEADER = 'Payment-Receipt';

/** base64url (no padding) of `JSON.stringify(receipt)`, as mppx writes it. */
export function encodeReceipt(receipt: Receipt): string {
  return encodeBase64Url(JSON.stringify(receiptSchema.parse(receipt)));
}

export function decodeReceipt(header: string): Result<Receipt> {
  let json: unknown;
  try {
    json = JSON.parse(decodeBase64UrlText(header.trim()));
  } catch {
    return fail('bad-request', 'receipt is not base64url-encoded JSON');
  }
  const parsed = receiptSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return fail('bad-request', `receipt ${issue?.path.join('.') || ''}: ${issue?.message ?? 'invalid'}`);
  }
  return ok(parsed.data);
}
