import { MERCHANT_API_KEY_SECURITY, jsonResponse, problemResponse, type OperationDoc } from '@mp/platform';
import { LEDGER_ERRORS } from '../openapi.shared';

/** What the OpenAPI document says about ChannelsController's routes (see @ApiDoc). */

const CHANNEL_EXAMPLE = {
  channelId: '0x6f0c3e1b1f3a4c2d9e8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e2d1c0b9a8f7e6d',
  scheme: 'mpp-session',
  network: 'eip155:8453',
  escrow: '0x5fbdb2315678afecb367f032d93f642f64180aa3',
  asset: 'eip155:8453/0x833589fcd6edb6e08f4c7c32d4f71b54bda02913',
  payer: '0x2b5ad5c4795c026514f8317c7a215e218dccd6cf',
  payee: '0x70997970c51812dc3a010c7d01b50e0d17dc79c8',
  state: 'closed',
  deposit: '1000000',
  accepted: '300000',
  spent: '250000',
  settled: '300000',
  refunded: '700000',
  held: '0',
  unspent: '50000',
  graceEndsAt: null,
  lastEventId: '42',
  openedAt: '2026-12-02T16:00:00.000Z',
  closedAt: '2026-12-02T16:20:00.000Z',
};

export const CHANNELS_DOCS = {
  get: {
    operationId: 'getChannelBooks',
    summary: "Read a payment channel's books",
    description:
      "A payment channel (MPP `session` on an EVM escrow, or an x402 `batch-settlement` channel) as the ledger booked it from the facilitator's channel events. Each figure is the balance of one of the channel's accounts, in atomic units of its token: `deposit` (paid into the escrow), `accepted` (cumulative vouchers), `spent` (what the merchant charged: its revenue), `settled` (paid out to the payee on chain), `refunded` (given back to the payer: at close, or by an x402 refund or withdrawal); `held` = deposit − settled − refunded (what the escrow holds for it) and `unspent` = accepted − spent. The books keep settled ≤ accepted ≤ deposit, spent ≤ accepted, and once `closed`, settled + refunded = deposit. `state`: open, closing (the payer asked to close; `graceEndsAt`), closed (finalized on chain). `scheme` says which kind of channel: `mpp-session` (an MPP session on the EVM escrow) or `x402-batch` (an x402 batch-settlement channel: `escrow` is the batch-settlement contract, `payee` the receiver; a claim counts as accepted and spent at once, settled is its share of the receiver's settles, refunded its refunds and withdrawals, and it stays `open`, since it can be deposited into again). Reconciliation compares them with the escrow's `getChannel`, or the batch-settlement contract's `channels` and `receivers`.",
    security: MERCHANT_API_KEY_SECURITY,
    parameters: [
      { name: 'channelId', in: 'path', required: true, schema: { type: 'string', pattern: '^0x[0-9a-fA-F]{64}$' }, description: "the channel's id (bytes32)" },
    ],
    responses: {
      '200': jsonResponse('The channel: where it is, its state and its figures (decimal strings).', { type: 'object' }, { example: CHANNEL_EXAMPLE }),
      ...LEDGER_ERRORS,
      '404': problemResponse("The merchant has no such channel in its books (another merchant's channels are the same 404)."),
    },
  },
} satisfies Record<string, OperationDoc>;
