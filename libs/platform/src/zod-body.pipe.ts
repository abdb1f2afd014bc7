import { Injectable, type PipeTransform } from '@nestjs/common';
import type { z } from 'zod';
import { ProblemError } from './problem';

/** Missing members read "is required" rather than zod's "expected string, received undefined". */
const PARSE = { error: (issue: { input?: unknown }) => (issue.input === undefined ? 'is required' : undefined) };

/**
 * A body parsed by a zod codec (`@Body(new ZodBodyPipe(schema))`), for protocol wire bodies whose codecs live in
 * libs/ and are shared with clients: no class-validator copy of them. A value the codec refuses is the
 * `validation_failed` problem naming each member by its path (`offers.0.method`, `(body)` for the whole body).
 */
@Injectable()
export class ZodBodyPipe<S extends z.ZodType> implements PipeTransform<unknown, z.infer<S>> {
  constructor(private readonly schema: S) {}

  transform(body: unknown): z.infer<S> {
    const parsed = this.schema.safeParse(body, PARSE);
    if (parsed.success) return parsed.data;
    const invalidParams = parsed.error.issues.map((i) => ({ name: i.path.join('.') || '(body)', reason: i.message }));
    throw new ProblemError('validation_failed', `invalid field(s): ${invalidParams.map((p) => p.name).join(', ')}`, { invalidParams });
  }
}
