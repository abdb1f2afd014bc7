import { type ArgumentMetadata, ValidationPipe, type ValidationError } from '@nestjs/common';
import { registerDecorator, type ValidatorOptions } from 'class-validator';
import { ProblemError, type InvalidParam } from './problem';

/** The rules every DTO is checked with. */
const VALIDATOR_OPTIONS = {
  whitelist: true,
  forbidNonWhitelisted: true,
  // A body that is not an object (an array, a string) is an error, not an empty DTO.
  forbidUnknownValues: true,
  // one reason per field: the first rule it breaks
  stopAtFirstError: true,
  // Never echo the rejected value or the DTO back (they may hold secrets).
  validationError: { target: false, value: false },
} satisfies ValidatorOptions;

/**
 * class-validator + class-transformer DTO validation whose failures are the platform's RFC 9457 problem
 * (`validation_failed`, 400) naming every bad field in `invalidParams`, as the hand-written checks elsewhere do:
 * a nested field is named by its path (`receivingAddresses.0.address`), an unknown field says `unknown field`.
 * Unknown fields are refused (forbidNonWhitelisted), values are converted to the DTO classes (transform).
 *
 * `configureHttpApp` installs it globally. It only checks parameters whose declared type is a class (a DTO): a
 * protocol route that takes `@Body() body: unknown` (x402, MPP, Stripe webhooks, A2A, MCP) gets its value untouched
 * and parses it with its own zod codec, so its answers stay in its protocol's shape.
 */
export function problemValidationPipe(): ValidationPipe {
  return new ProblemValidationPipe({ ...VALIDATOR_OPTIONS, transform: true, exceptionFactory: (errors) => validationProblem(errors) });
}

class ProblemValidationPipe extends ValidationPipe {
  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    // class-transformer would read an array body as an object with keys 0, 1, …: refuse any body that is not an object
    const isObject = value !== null && typeof value === 'object' && !Array.isArray(value);
    if (metadata.type === 'body' && value !== undefined && !isObject && this.toValidate(metadata)) {
      throw new ProblemError('validation_failed', 'the body must be a JSON object', { invalidParams: [{ name: '(body)', reason: 'must be a JSON object' }] });
    }
    try {
      // class-transformer drops them unseen: refused as unknown, as any member the DTO does not declare
      const hidden = isObject && this.toValidate(metadata) ? PROTOTYPE_KEYS.filter((key) => Object.hasOwn(value, key)) : [];
      if (hidden.length) throw invalidFields(hidden.map((name) => ({ name, reason: UNKNOWN_FIELD })));
      return await super.transform(value, metadata);
    } catch (error) {
      if (!(error instanceof ProblemError) || error.code !== 'validation_failed' || metadata.type === 'body') throw error;
      // the words of the hand-written checks: "invalid query parameter(s): limit", "unknown query parameter"
      const what = metadata.type === 'query' ? 'query parameter' : 'path parameter';
      const invalidParams = (error.extensions.invalidParams ?? []).map((p) => (p.reason === UNKNOWN_FIELD ? { ...p, reason: `unknown ${what}` } : p));
      throw new ProblemError('validation_failed', error.message.replace(/^invalid field\(s\)/, `invalid ${what}(s)`), { invalidParams });
    }
  }
}

const UNKNOWN_FIELD = 'unknown field';
const PROTOTYPE_KEYS = ['constructor', '__proto__'];

/** The problem for a list of class-validator errors. */
export function validationProblem(errors: ValidationError[]): ProblemError {
  return invalidFields(fieldsOf(errors));
}

/** Most fields one problem names: a batch of a thousand bad items is refused with a readable answer. */
const MAX_INVALID_PARAMS = 50;

function invalidFields(invalidParams: InvalidParam[]): ProblemError {
  const shown = invalidParams.slice(0, MAX_INVALID_PARAMS);
  const names = [...new Set(shown.map((p) => p.name))];
  return new ProblemError('validation_failed', `invalid field(s): ${names.join(', ')}`, { invalidParams: shown });
}

/** The DTO's own fields in declaration order, then the unknown ones (class-validator reports those first). */
function fieldsOf(errors: ValidationError[]): InvalidParam[] {
  const all = errors.flatMap((error) => invalidParamsOf(error, ''));
  return [...all.filter((p) => p.reason !== UNKNOWN_FIELD), ...all.filter((p) => p.reason === UNKNOWN_FIELD)];
}

/**
 * A rule given as a predicate (class-validator's own decorators have no "this parser accepts it"); `object` is the
 * DTO. The reason may depend on the value (a negative amount gets a hint of its own).
 */
export function Satisfies(
  check: (value: unknown, object: Record<string, unknown>) => boolean,
  reason: string | ((value: unknown) => string),
): PropertyDecorator {
  return (target, propertyName) =>
    registerDecorator({
      name: 'satisfies',
      target: target.constructor,
      propertyName: String(propertyName),
      options: { message: typeof reason === 'string' ? reason : (args) => reason(args.value) },
      validator: { validate: (value, args) => check(value, args?.object as Record<string, unknown>) },
    });
}

function invalidParamsOf(error: ValidationError, parent: string): InvalidParam[] {
  // class-validator names an error of a whole non-object value with an empty or undefined property
  const own = error.property === undefined || error.property === '' ? '' : String(error.property);
  const name = parent && own ? `${parent}.${own}` : parent || own || '(body)';
  const constraints = error.constraints ?? {};
  const params: InvalidParam[] = [];
  if (constraints.whitelistValidation) params.push({ name, reason: UNKNOWN_FIELD });
  else if (constraints.unknownValue) params.push({ name, reason: 'must be a JSON object' });
  else params.push(...Object.values(constraints).map((reason) => ({ name, reason })));
  for (const child of error.children ?? []) params.push(...invalidParamsOf(child, name === '(body)' ? '' : name));
  return params;
}
