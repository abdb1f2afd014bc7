import type { InvalidParam } from '@mp/platform';

/**
 * Usage events as the ledger reads them: CloudEvents 1.0 in their JSON format (one event, or a batch as a JSON
 * array), checked by hand-written pure functions because this is the hot path (100 events per request, ≥ 20,000
 * events/s): no DTO classes are instantiated per event.
 */

/** Most events one request may carry (a batch of more is refused whole, 413). */
export const MAX_EVENTS_PER_REQUEST = 100;
/** Accepted event times: from 35 days before now … */
export const MAX_EVENT_AGE_MS = 35 * 24 * 3600_000;
/** … to 5 minutes after it (clock skew of the sender). */
export const MAX_EVENT_LEAD_MS = 5 * 60_000;

const MAX_ID_LENGTH = 256;
const MAX_SOURCE_LENGTH = 512;
const MAX_TYPE_LENGTH = 256;
const MAX_SUBJECT_LENGTH = 256;

/** RFC 3339 date-time (the `T` and `Z` in either case, any fraction of a second, an offset or Z). */
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
/** CloudEvents' attribute names: lowercase letters and digits. Extension attributes are accepted and not kept. */
const ATTRIBUTE_NAME = /^[a-z0-9]{1,20}$/;
const KNOWN_ATTRIBUTES = new Set(['id', 'source', 'specversion', 'type', 'subject', 'time', 'data', 'datacontenttype', 'dataschema']);

export interface UsageEventInput {
  id: string;
  source: string;
  type: string;
  subject: string;
  time: Date;
  /** the data object as JSON text (what the database stores), or null */
  data: string | null;
}

/** Why an event is refused: a malformed event, or a time outside the accepted window. */
export type UsageEventReason = 'invalid_event' | 'event_too_old' | 'event_in_future';

export interface UsageEventProblem extends InvalidParam {
  reasonCode: UsageEventReason;
}

export type ParsedUsageEvents =
  { ok: true; events: UsageEventInput[] } | { ok: false; tooMany: number } | { ok: false; shape: string } | { ok: false; problems: UsageEventProblem[] };

/** How the body was declared: one event, a batch, or plain JSON (either). */
export type UsageContentKind = 'single' | 'batch' | 'json';

/** The kind of body a Content-Type announces (`application/cloudevents+json`, `…-batch+json`, or plain JSON). */
export function usageContentKind(contentType: string | undefined): UsageContentKind {
  const type = (contentType ?? '').split(';')[0].trim().toLowerCase();
  if (type === 'application/cloudevents+json') return 'single';
  if (type === 'application/cloudevents-batch+json') return 'batch';
  return 'json';
}

/**
 * The events of a request body, all of them or none: any malformed event, or any event outside
 * [now − 35 days, now + 5 minutes], refuses the whole batch, each problem named by its place (`events[3].time`), so a
 * client fixes and resends the same batch (duplicates of events that were stored are then counted, never stored twice).
 */
export function parseUsageEvents(body: unknown, kind: UsageContentKind, now: Date): ParsedUsageEvents {
  const isArray = Array.isArray(body);
  if (kind === 'single' && (isArray || !isObject(body))) return { ok: false, shape: 'application/cloudevents+json carries one event: a JSON object' };
  if (kind === 'batch' && !isArray) return { ok: false, shape: 'application/cloudevents-batch+json carries a JSON array of events' };
  if (!isArray && !isObject(body)) return { ok: false, shape: 'the body must be one event (a JSON object) or a batch (a JSON array of events)' };
  const items: unknown[] = isArray ? body : [body];
  if (items.length === 0) return { ok: false, shape: 'the batch is empty: send 1 to 100 events' };
  if (items.length > MAX_EVENTS_PER_REQUEST) return { ok: false, tooMany: items.length };
  const oldest = now.getTime() - MAX_EVENT_AGE_MS;
  const latest = now.getTime() + MAX_EVENT_LEAD_MS;
  const events: UsageEventInput[] = [];
  const problems: UsageEventProblem[] = [];
  for (let i = 0; i < items.length; i++) {
    const at = isArray ? `events[${i}]` : 'event';
    const event = parseEvent(items[i], at, now, oldest, latest, problems);
    if (event) events.push(event);
  }
  return problems.length ? { ok: false, problems } : { ok: true, events };
}

function parseEvent(value: unknown, at: string, now: Date, oldest: number, latest: number, problems: UsageEventProblem[]): UsageEventInput | undefined {
  if (!isObject(value)) {
    problems.push({ name: at, reason: 'must be a JSON object (a CloudEvent)', reasonCode: 'invalid_event' });
    return undefined;
  }
  const before = problems.length;
  const bad = (field: string, reason: string, reasonCode: UsageEventReason = 'invalid_event') => problems.push({ name: `${at}.${field}`, reason, reasonCode });
  const text = (field: string, max: number): string => {
    const v = value[field];
    if (typeof v !== 'string' || v.length === 0 || v.length > max) bad(field, v === undefined ? 'is required' : `must be a string of 1 to ${max} characters`);
    else if (!storable(v)) bad(field, UNSTORABLE_REASON);
    return v as string;
  };
  const id = text('id', MAX_ID_LENGTH);
  const source = text('source', MAX_SOURCE_LENGTH);
  const type = text('type', MAX_TYPE_LENGTH);
  const subject = text('subject', MAX_SUBJECT_LENGTH);
  // clients often leave specversion out; a missing one is read as 1.0, any other version is refused
  if (value.specversion !== undefined && value.specversion !== '1.0') bad('specversion', 'must be "1.0"');
  if (value.datacontenttype !== undefined && (typeof value.datacontenttype !== 'string' || !/^application\/(?:[\w.+-]+\+)?json\b/i.test(value.datacontenttype)))
    bad('datacontenttype', 'must be application/json: data is a JSON object');
  if (value.dataschema !== undefined && (typeof value.dataschema !== 'string' || value.dataschema.length === 0)) bad('dataschema', 'must be a URI');
  for (const name of Object.keys(value)) {
    if (!KNOWN_ATTRIBUTES.has(name) && !ATTRIBUTE_NAME.test(name)) bad(name, 'unknown attribute: extension names are 1 to 20 lowercase letters or digits');
  }
  let data: string | null = null;
  if (value.data !== undefined && value.data !== null) {
    if (!isObject(value.data)) bad('data', 'must be a JSON object');
    else if (!storableJson(value.data, 0)) bad('data', UNSTORABLE_REASON);
    else data = JSON.stringify(value.data);
  }
  let time = now;
  if (value.time !== undefined) {
    const parsed = parseTime(value.time);
    if (!parsed) bad('time', 'must be an RFC 3339 date-time, e.g. 2026-12-02T10:00:00Z');
    else if (parsed.getTime() < oldest)
      bad('time', `event_too_old: events may be at most 35 days old (the oldest accepted now is ${new Date(oldest).toISOString()})`, 'event_too_old');
    else if (parsed.getTime() > latest)
      bad('time', `event_in_future: events may be at most 5 minutes ahead (the latest accepted now is ${new Date(latest).toISOString()})`, 'event_in_future');
    else time = parsed;
  }
  return problems.length === before ? { id, source, type, subject, time, data } : undefined;
}

/** An RFC 3339 date-time as a Date (to the millisecond), or undefined when it is not one or not a real date. */
export function parseTime(value: unknown): Date | undefined {
  if (typeof value !== 'string') return undefined;
  const m = RFC3339.exec(value);
  if (!m) return undefined;
  const [, year, month, day, hour, minute, second] = m.map(Number);
  if (month < 1 || month > 12 || day < 1 || day > new Date(Date.UTC(year, month, 0)).getUTCDate() || hour > 23 || minute > 59 || second > 60) return undefined;
  const ms = Date.parse(value.toUpperCase());
  return Number.isNaN(ms) ? undefined : new Date(ms);
}

const UNSTORABLE_REASON = 'must not contain the NUL character (\\u0000) or an unpaired surrogate (PostgreSQL stores neither)';

/** PostgreSQL's text and jsonb refuse NUL, and jsonb an unpaired surrogate; UTF-8 encoding would replace one silently. */
export const storable = (text: string) => !text.includes('\0') && !LONE_SURROGATE.test(text);
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function storableJson(value: unknown, depth: number): boolean {
  if (typeof value === 'string') return storable(value);
  if (value === null || typeof value !== 'object' || depth > 64) return true;
  if (Array.isArray(value)) return value.every((item) => storableJson(item, depth + 1));
  return Object.entries(value).every(([key, item]) => storable(key) && storableJson(item, depth + 1));
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
