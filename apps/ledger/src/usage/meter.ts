/**
 * Meters: how a merchant's usage events of one type are totalled, and the SQL that totals them. Pure: no Nest, no
 * database; the store runs what `summarySql` builds. Values are NUMERIC in PostgreSQL and decimal strings on the
 * wire, never floats.
 */

export const AGGREGATIONS = ['sum', 'count', 'min', 'max', 'avg', 'unique_count', 'latest'] as const;
export type Aggregation = (typeof AGGREGATIONS)[number];

export const WINDOW_SIZES = ['hour', 'day', 'month', 'none'] as const;
export type WindowSize = (typeof WINDOW_SIZES)[number];

/** Decimal places an average is rounded to (half away from zero), trailing zeros then dropped. */
export const AVG_SCALE = 18;

export const METER_KEY_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/;
export const GROUP_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
export const MAX_GROUP_BY = 10;

/** `$.tokens`, `$.usage.input_tokens`: a dot path of 1 to 8 names (letters, digits, `_`, `-`) into the event's data. */
const JSON_PATH = /^\$(\.[A-Za-z0-9_-]{1,64}){1,8}$/;

export interface MeterDefinition {
  key: string;
  eventType: string;
  aggregation: Aggregation;
  /** null for count */
  valueProperty: string | null;
  /** dimension name → JSON path */
  groupBy: Record<string, string>;
}

export const isJsonPath = (value: unknown): value is string => typeof value === 'string' && JSON_PATH.test(value);

/** `$.usage.input` → `{usage,input}`, a PostgreSQL text[] for the `#>` operator (names have no commas, quotes or braces). */
export const jsonPathSegments = (path: string): string[] => path.slice(2).split('.');

/** The meter definition's fields that differ between two definitions of one key. */
export function differingMeterFields(a: MeterDefinition, b: MeterDefinition): string[] {
  const fields: string[] = [];
  if (a.eventType !== b.eventType) fields.push('eventType');
  if (a.aggregation !== b.aggregation) fields.push('aggregation');
  if (a.valueProperty !== b.valueProperty) fields.push('valueProperty');
  if (canonicalGroupBy(a.groupBy) !== canonicalGroupBy(b.groupBy)) fields.push('groupBy');
  return fields;
}

const canonicalGroupBy = (groupBy: Record<string, string>) =>
  JSON.stringify(
    Object.keys(groupBy)
      .sort()
      .map((k) => [k, groupBy[k]]),
  );

export interface SummaryQuery {
  merchantId: string;
  subject?: string;
  from?: Date;
  to?: Date;
  windowSize: WindowSize;
}

/**
 * The one statement that totals a meter: events of the meter's type for the merchant (and subject, if given) with
 * `from <= time < to`, grouped by UTC calendar window and the groupBy dimensions. Windows without events are not
 * listed. Each value is text: an exact decimal (trim_scale drops trailing zeros), or null when no event in the
 * window carries a numeric value (min, max, avg, latest).
 *
 * A value is the property's JSON number, or a JSON string holding a plain decimal (`"12.5"`); anything else (absent,
 * null, other strings, objects) is no value: it does not add to sum, min, max, avg or latest, and count still counts
 * the event. unique_count counts the distinct JSON values of the property (absent and null are no value; JSON
 * equality: `1` and `1.0` are one value, the number `1` and the string `"1"` two).
 */
export function summarySql(meter: MeterDefinition, query: SummaryQuery): { text: string; values: unknown[] } {
  const values: unknown[] = [];
  const param = (value: unknown, cast: string) => {
    values.push(value);
    return `$${values.length}::${cast}`;
  };
  const where = [`merchant_id = ${param(query.merchantId, 'uuid')}`, `type = ${param(meter.eventType, 'text')}`];
  if (query.subject !== undefined) where.push(`subject = ${param(query.subject, 'text')}`);
  if (query.from) where.push(`time >= ${param(query.from.toISOString(), 'timestamptz')}`);
  if (query.to) where.push(`time < ${param(query.to.toISOString(), 'timestamptz')}`);

  const path = meter.valueProperty === null ? undefined : param(jsonPathSegments(meter.valueProperty), 'text[]');
  const numeric = path ? numericValueSql('data', path) : 'NULL::numeric';
  const value = aggregateSql(meter.aggregation, numeric, path);

  const window = query.windowSize === 'none' ? 'NULL::timestamptz' : `date_trunc('${query.windowSize}', time, 'UTC')`;
  const groups = Object.entries(meter.groupBy).map(([, groupPath]) => `(data #>> ${param(jsonPathSegments(groupPath), 'text[]')})`);
  const selectGroups = groups.map((g, i) => `, ${g} AS g${i}`).join('');
  const positions = ['1', ...groups.map((_g, i) => String(i + 3))];
  // groups without the dimension (null) come after the others
  const text =
    `SELECT ${window} AS window_start, ${value} AS value${selectGroups} FROM ledger.usage_events` +
    ` WHERE ${where.join(' AND ')} GROUP BY ${positions.join(', ')} ORDER BY ${positions.map((p) => `${p} NULLS LAST`).join(', ')}`;
  return { text, values };
}

/**
 * An event's value as NUMERIC, or NULL: the JSON number at `path` (a text[] expression) in `data`, or a JSON string
 * holding a plain decimal. What summaries and the usage billing of subscriptions both total.
 */
export function numericValueSql(data: string, path: string): string {
  return (
    `(CASE jsonb_typeof(${data} #> ${path}) WHEN 'number' THEN (${data} #>> ${path})::numeric` +
    ` WHEN 'string' THEN CASE WHEN (${data} #>> ${path}) ~ '^-?[0-9]{1,60}(\\.[0-9]{1,60})?$' THEN (${data} #>> ${path})::numeric END END)`
  );
}

function aggregateSql(aggregation: Aggregation, numeric: string, path: string | undefined): string {
  switch (aggregation) {
    case 'count':
      return 'count(*)::text';
    case 'sum':
      return `trim_scale(coalesce(sum(${numeric}), 0))::text`;
    case 'min':
      return `trim_scale(min(${numeric}))::text`;
    case 'max':
      return `trim_scale(max(${numeric}))::text`;
    case 'avg':
      // the exact sum and the count of values; the division is exactAverage's (PostgreSQL's avg keeps ~16 digits)
      return `trim_scale(sum(${numeric}))::text || '/' || count(${numeric})::text`;
    case 'unique_count':
      return `(count(DISTINCT (data #> ${path})) FILTER (WHERE jsonb_typeof(data #> ${path}) <> 'null'))::text`;
    case 'latest':
      // the value of the last event by time; events of the same time by arrival, then by id
      return `trim_scale((array_agg(${numeric} ORDER BY time DESC, received_at DESC, event_id DESC) FILTER (WHERE ${numeric} IS NOT NULL))[1])::text`;
  }
}

/**
 * `sum/count` (the avg column's text) divided exactly: the quotient rounded half away from zero to AVG_SCALE decimal
 * places, trailing zeros dropped; null when there is no value (count 0).
 */
export function exactAverage(sumOverCount: string | null): string | null {
  if (sumOverCount === null) return null;
  const [sum, countText] = sumOverCount.split('/');
  const count = BigInt(countText);
  if (count === 0n) return null;
  const negative = sum.startsWith('-');
  const [whole, fraction = ''] = (negative ? sum.slice(1) : sum).split('.');
  // |sum| = digits / 10^fraction.length, so |avg| · 10^AVG_SCALE = digits · 10^AVG_SCALE / (10^fraction.length · count)
  const numerator = BigInt(whole + fraction) * 10n ** BigInt(AVG_SCALE);
  const denominator = 10n ** BigInt(fraction.length) * count;
  let quotient = numerator / denominator;
  if (2n * (numerator % denominator) >= denominator) quotient += 1n;
  const digits = quotient.toString().padStart(AVG_SCALE + 1, '0');
  const integer = digits.slice(0, -AVG_SCALE);
  const decimals = digits.slice(-AVG_SCALE).replace(/0+$/, '');
  const text = decimals ? `${integer}.${decimals}` : integer;
  return negative && quotient !== 0n ? `-${text}` : text;
}

/** Where a window ends: the next hour, day or month (UTC), or the query's end for `none`. */
export function windowEnd(start: Date, size: Exclude<WindowSize, 'none'>): Date {
  const end = new Date(start);
  if (size === 'hour') end.setUTCHours(end.getUTCHours() + 1);
  else if (size === 'day') end.setUTCDate(end.getUTCDate() + 1);
  else end.setUTCMonth(end.getUTCMonth() + 1);
  return end;
}
