import type { Prisma } from '@mp/db';
import type { PaymentState } from './payment-transitions';

export type { PaymentState } from './payment-transitions';

/** A payment as settlement reads it to decide what to do next, whichever rail it is on. */
export interface PaymentRecord {
  id: string;
  state: PaymentState;
  payloadHash: string;
  txHash: string | null;
  signer: string | null;
  errorReason: string | null;
  errorMessage: string | null;
  updatedAt: Date;
  /** the merchant whose API key claimed it; null in open mode without a key */
  merchantId: string | null;
}

/** The columns of a {@link PaymentRecord}: their Prisma names are the record's members. */
export const PAYMENT_RECORD = {
  id: true,
  state: true,
  payloadHash: true,
  txHash: true,
  signer: true,
  errorReason: true,
  errorMessage: true,
  updatedAt: true,
  merchantId: true,
} satisfies Prisma.PaymentSelect;
