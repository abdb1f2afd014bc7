import { invalidRequest, oneOf } from './errors';
import type { FormObject } from './form';
import { readInteger, readObject, readString, onlyParams } from './params';

/** Stripe's list envelope. */
export interface ListPage<T> {
  object: 'list';
  data: T[];
  has_more: boolean;
  url: string;
}

/** The parameters every list endpoint takes; endpoints add their own filters. */
export const LIST_PARAMS = ['limit', 'starting_after', 'ending_before', 'created'] as const;

/**
 * One page of `items` (given oldest first), newest first as Stripe lists them. Objects created in the same second
 * keep their creation order. `starting_after` pages towards older objects, `ending_before` towards newer ones (the
 * page then holds the `limit` objects just newer than the cursor, still newest first, which is what the SDK's
 * auto-pagination expects). `created` is an exact second or a range `created[gt|gte|lt|lte]`.
 */
export function paginate<T extends { id: string; created: number }>(
  items: T[],
  params: FormObject,
  url: string,
  filter: (item: T) => boolean = () => true,
): ListPage<T> {
  const limit = readInteger(params.limit, 'limit', { min: 1, max: 100 }) ?? 10;
  const startingAfter = readString(params.starting_after, 'starting_after');
  const endingBefore = readString(params.ending_before, 'ending_before');
  if (startingAfter && endingBefore) throw oneOf('starting_after', 'ending_before');
  const inRange = createdFilter(params);

  const newestFirst = [...items].reverse();
  const cursor = startingAfter ?? endingBefore;
  const at = cursor === undefined ? -1 : newestFirst.findIndex((item) => item.id === cursor);
  if (cursor !== undefined && at < 0)
    throw invalidRequest(`No such object: '${cursor}'`, { code: 'resource_missing', param: startingAfter ? 'starting_after' : 'ending_before' });

  const candidates = endingBefore ? newestFirst.slice(0, at) : newestFirst.slice(at + 1);
  const matching = candidates.filter((item) => inRange(item.created) && filter(item));
  const data = endingBefore ? matching.slice(Math.max(0, matching.length - limit)) : matching.slice(0, limit);
  return { object: 'list', data, has_more: matching.length > limit, url };
}

function createdFilter(params: FormObject): (created: number) => boolean {
  if (typeof params.created === 'string') {
    const exact = readInteger(params.created, 'created');
    return (created) => exact === undefined || created === exact;
  }
  const range = readObject(params.created, 'created') ?? {};
  onlyParams(range, ['gt', 'gte', 'lt', 'lte'], 'created');
  const [gt, gte, lt, lte] = (['gt', 'gte', 'lt', 'lte'] as const).map((op) => readInteger(range[op], `created[${op}]`));
  return (created) =>
    (gt === undefined || created > gt) && (gte === undefined || created >= gte) && (lt === undefined || created < lt) && (lte === undefined || created <= lte);
}
