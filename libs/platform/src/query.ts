import { z } from 'zod';

/**
 * A page-size query parameter: a string of digits from 1 to `max` (query strings are text), parsed to a number. One
 * rule and one message for every list endpoint of every app.
 */
export function limitQuery(max: number) {
  const reason = `must be an integer from 1 to ${max}`;
  return z
    .string()
    .regex(new RegExp(`^[1-9][0-9]{0,${String(max).length - 1}}$`), reason)
    .transform(Number)
    .refine((n) => n <= max, reason);
}
