import type { Handler } from './api';
import { invalidRequest } from './errors';
import { onlyParams, readInteger, readString, required } from './params';
import type { PaymentIntent } from './store';

/** Stripe's search envelope (`GET /v1/<objects>/search`). */
export interface SearchResult<T> {
  object: 'search_result';
  data: T[];
  has_more: boolean;
  next_page: string | null;
  url: string;
}

/** One `field:'value'` clause of a search query. */
interface Clause {
  field: string;
  /** the metadata key, for `metadata['key']` */
  key?: string;
  value: string;
}

const PAYMENT_INTENT_FIELDS = ['amount', 'currency', 'status', 'metadata'] as const;

/**
 * `GET /v1/payment_intents/search`: the part of Stripe's search query language the facilitator uses, exact matches
 * (`metadata['challenge_id']:'…'`, `status:'succeeded'`, `currency:'usd'`, `amount:500`) joined by AND. Anything
 * else (OR, negation, ranges, prefix `~`) is refused with a 400 naming the clause, never silently matched wrongly.
 * Unlike Stripe (whose index lags writes by up to a minute) the fake's results are current.
 */
export const searchPaymentIntents: Handler = (context, request) => {
  onlyParams(request.params, ['query', 'limit', 'page']);
  const query = required(readString(request.params.query, 'query'), 'query');
  const limit = readInteger(request.params.limit, 'limit', { min: 1, max: 100 }) ?? 10;
  const offset = readPage(readString(request.params.page, 'page'));
  const clauses = parseQuery(query);
  const matching = [...context.store.paymentIntents.all()].reverse().filter((intent) => clauses.every((clause) => matches(intent, clause)));
  const data = matching.slice(offset, offset + limit);
  const hasMore = matching.length > offset + limit;
  const result: SearchResult<PaymentIntent> = {
    object: 'search_result',
    data,
    has_more: hasMore,
    next_page: hasMore ? Buffer.from(`offset:${offset + limit}`).toString('base64url') : null,
    url: request.path,
  };
  return result;
};

export function parseQuery(query: string): Clause[] {
  const parts = query.trim().split(/\s+AND\s+/);
  return parts.map((part) => {
    const clause = /^(?<field>[a-z_]+)(?:\[(?<quote>['"])(?<key>[^'"\]]+)\k<quote>\])?:(?:(?<q>['"])(?<quoted>[^'"]*)\k<q>|(?<bare>[0-9]+))$/.exec(part.trim());
    const groups = clause?.groups;
    if (
      !groups ||
      !PAYMENT_INTENT_FIELDS.includes(groups.field as (typeof PAYMENT_INTENT_FIELDS)[number]) ||
      (groups.field === 'metadata') !== (groups.key !== undefined)
    ) {
      throw invalidRequest(
        `The fake Stripe's search supports exact clauses on ${PAYMENT_INTENT_FIELDS.join(', ')} (metadata['key']:'value') joined by AND; it cannot read "${part.trim().slice(0, 100)}".`,
        { param: 'query' },
      );
    }
    return { field: groups.field, ...(groups.key !== undefined && { key: groups.key }), value: groups.quoted ?? groups.bare };
  });
}

function matches(intent: PaymentIntent, clause: Clause): boolean {
  if (clause.field === 'metadata') return intent.metadata[clause.key!] === clause.value;
  return String(intent[clause.field as 'amount' | 'currency' | 'status']) === clause.value;
}

function readPage(page: string | undefined): number {
  if (page === undefined) return 0;
  const offset = /^offset:(\d{1,9})$/.exec(Buffer.from(page, 'base64url').toString('utf8'))?.[1];
  if (offset === undefined) throw invalidRequest(`Invalid page: ${page.slice(0, 100)}`, { param: 'page' });
  return Number(offset);
}
