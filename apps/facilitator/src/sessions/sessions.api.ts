import { z } from 'zod';

const atomic = z.string().regex(/^(0|[1-9][0-9]{0,77})$/, 'must be a decimal string of atomic units');

/** POST /mpp/sessions/charges: what the merchant delivers next on a channel, charged before delivery. */
export const sessionChargeSchema = z.strictObject({
  /** the channel (the receipt's `channelId`) */
  channelId: z
    .string()
    .regex(/^0x[0-9a-fA-F]{64}$/, 'must be a 0x-prefixed 32-byte channel id')
    .transform((v) => v.toLowerCase() as `0x${string}`),
  /** atomic units of the channel's token */
  amount: atomic.refine((v) => v !== '0', 'must be positive'),
  /** the merchant's idempotency key: the same chargeId on a channel is charged once, and answered with its first outcome */
  chargeId: z.string().regex(/^[\x21-\x7e]{1,200}$/, 'must be 1 to 200 printable ASCII characters without spaces'),
  /** units delivered (tokens, seconds, …), carried into the receipt and the `channel.spent` event */
  units: atomic.optional(),
});

export type SessionChargeInput = z.infer<typeof sessionChargeSchema>;

export const channelIdParamSchema = z
  .string()
  .regex(/^0x[0-9a-fA-F]{64}$/, 'must be a 0x-prefixed 32-byte channel id')
  .transform((v) => v.toLowerCase() as `0x${string}`);

export const SESSION_API_SCHEMAS: Record<string, { schema: z.ZodType; description: string }> = {
  MppSessionCharge: {
    schema: sessionChargeSchema,
    description:
      'A charge against an MPP evm session channel, made before the merchant delivers: `spent` rises by `amount` only while it stays within the accepted vouchers. `chargeId` is the idempotency key per channel.',
  },
};
