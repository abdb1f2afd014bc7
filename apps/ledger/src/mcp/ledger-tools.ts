import { McpError, type CallToolResult, type Tool as ToolListing } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { isEntitled, type Clock } from '@mp/billing';
import { AccountCode, paymentTransferId, type AccountRole } from '@mp/ledger';
import { entitlementAt } from '../billing/entitlements';
import { factsOf, subscriptionView } from '../billing/subscription';
import { normalizePayer } from '../billing/subscription-lifecycle.service';
import type { SubscriptionsRepository } from '../billing/subscriptions.repository';
import type { LedgerService } from '../core/ledger.service';
import { accountView, transferView } from '../http/views';

/** JSON-RPC's invalid-params code: what a tool answers to arguments it refuses. */
const INVALID_PARAMS = -32602;

/** What a tool may read: the ledger, scoped to the merchant whose API key called. */
export interface ToolScope {
  merchantId: string;
  ledger: LedgerService;
  subscriptions: SubscriptionsRepository;
  /** the billing clock: what "now" is for an entitlement */
  clock: Clock;
}

export interface LedgerTool {
  listing: ToolListing;
  run(scope: ToolScope, args: unknown): Promise<CallToolResult>;
}

function defineTool<T>(tool: { name: string; description: string; args: z.ZodType<T>; run(scope: ToolScope, args: T): Promise<unknown> }): LedgerTool {
  return {
    listing: {
      name: tool.name,
      description: tool.description,
      inputSchema: z.toJSONSchema(tool.args) as ToolListing['inputSchema'],
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async run(scope, args) {
      const parsed = tool.args.safeParse(args ?? {});
      if (!parsed.success) throw new McpError(INVALID_PARAMS, `invalid arguments for ${tool.name}: ${z.prettifyError(parsed.error)}`);
      const value = await tool.run(scope, parsed.data);
      return { content: [{ type: 'text', text: JSON.stringify(value) }], structuredContent: value as Record<string, unknown> };
    },
  };
}

const ROLE_OF_CODE = new Map<number, AccountRole>(Object.entries(AccountCode).map(([role, code]) => [code, role as AccountRole]));
/** The ledger's ids are UUIDs (any version: chart ids are name-based v8). */
const ledgerId = z.string().regex(/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/, 'must be a UUID');
const MAX_ACCOUNTS = 200;

const balances = defineTool({
  name: 'balances',
  description:
    "The merchant's accounts with their balances (atomic units as decimal strings), newest first, at most 200: revenue, payer clearing, processor fees, gas. Optionally of one asset, e.g. `stripe/usd` or `eip155:8453/0x833589fcd6edb6e08f4c7c32d4f71b54bda02913`.",
  args: z.strictObject({ asset: z.string().min(1).max(200).optional().describe('only accounts of this ledger asset') }),
  async run({ merchantId, ledger }, { asset }) {
    const page = await ledger.listAccounts(merchantId, asset === undefined ? {} : { asset }, MAX_ACCOUNTS);
    return {
      accounts: page.rows.map((account) => ({ role: ROLE_OF_CODE.get(account.code) ?? null, ...accountView(account) })),
      truncated: page.next !== undefined,
    };
  },
});

/** The booking steps of a facilitator payment, in the order they happen (libs/ledger `paymentTransferId`). */
const PAYMENT_STEPS = ['pending', 'post', 'void', 'late', 'fee', 'gas'] as const;

const transaction = defineTool({
  name: 'transaction',
  description:
    "How the ledger booked one facilitator payment (by `paymentId`: its hold, post or void, Stripe's fee and the gas, each with its status) or one transfer (by `transferId`).",
  // one object with exactly one of the two (MCP wants an object schema, not a union)
  args: z
    .strictObject({
      paymentId: ledgerId.optional().describe("the facilitator's payment id"),
      transferId: ledgerId.optional().describe('a ledger transfer id'),
    })
    .refine((args) => (args.paymentId === undefined) !== (args.transferId === undefined), 'give exactly one of paymentId and transferId'),
  async run({ merchantId, ledger }, args) {
    if (args.transferId !== undefined) {
      const [transfer] = await ledger.lookupTransfers(merchantId, [args.transferId]);
      return { found: transfer !== undefined, transfers: transfer ? [transferView(transfer)] : [] };
    }
    const paymentId = args.paymentId as string;
    const ids = PAYMENT_STEPS.map((step) => paymentTransferId(paymentId, step));
    const found = new Map((await ledger.lookupTransfers(merchantId, ids)).map((transfer) => [transfer.id, transfer]));
    const transfers = PAYMENT_STEPS.flatMap((step, i) => {
      const transfer = found.get(ids[i]);
      return transfer ? [{ step, ...transferView(transfer) }] : [];
    });
    return { found: transfers.length > 0, transfers };
  },
});

const SUBSCRIPTIONS_LISTED = 10;

const subscriptionStatus = defineTool({
  name: 'subscription_status',
  description:
    "A subscription of the merchant's (by `subscriptionId`): its state, plan, periods paid and cancel, and whether its payer is entitled now. Or a payer's standing for one product (by `payer` and `product`): the entitlement as GET /entitlements answers it, with the payer's newest subscriptions to it (at most 10).",
  args: z
    .strictObject({
      subscriptionId: z.string().min(1).max(200).optional().describe('the subscription id (as the MPP receipt carries it)'),
      payer: z.string().min(1).max(200).optional().describe('the payer: a 0x address, or a Stripe customer id'),
      product: z.string().min(1).max(200).optional().describe("the plan's product"),
    })
    .refine(
      (args) =>
        (args.subscriptionId !== undefined) !== (args.payer !== undefined && args.product !== undefined) &&
        (args.payer === undefined) === (args.product === undefined),
      'give either subscriptionId, or payer and product',
    ),
  async run({ merchantId, subscriptions, clock }, args) {
    const now = clock.now();
    if (args.subscriptionId !== undefined) {
      const subscription = await subscriptions.find(merchantId, args.subscriptionId);
      if (!subscription) return { found: false, subscription: null, entitled: false };
      return { found: true, subscription: subscriptionView(subscription), entitled: isEntitled(factsOf(subscription), now) };
    }
    const found = await subscriptions.ofPayerAndProduct(merchantId, normalizePayer(args.payer!), args.product!);
    return { ...entitlementAt(found, now), subscriptions: found.slice(0, SUBSCRIPTIONS_LISTED).map(subscriptionView) };
  },
});

export const LEDGER_TOOLS: ReadonlyMap<string, LedgerTool> = new Map([balances, transaction, subscriptionStatus].map((tool) => [tool.listing.name, tool]));
