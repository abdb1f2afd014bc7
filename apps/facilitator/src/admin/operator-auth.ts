import { createHash, timingSafeEqual } from 'node:crypto';
import { type CanActivate, type ExecutionContext, Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import type { Request, Response } from 'express';
import { ProblemError } from '@mp/platform';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../config/facilitator.config';
import { AuthFailureLimiter } from '../merchants/auth-failure-limiter';

/**
 * The operator's access to /admin (the merchant admin API) and /admin/queues (bull-board): `Authorization: Bearer
 * <OPERATOR_TOKEN>`. Without OPERATOR_TOKEN both answer 404 as if they did not exist. A wrong token is a 401 and
 * counts against the client address's failed attempts, the same AUTH_FAILURES_PER_MINUTE budget as bad API keys;
 * past it the address gets 429 before its token is even compared. Merchant API keys are never operator tokens.
 */
@Injectable()
export class OperatorAuth implements OnModuleInit {
  private readonly logger = new Logger('OperatorApi');
  /** sha256 of the token: comparing digests takes the same time whatever the length or content presented */
  private readonly tokenDigest: Buffer | undefined;

  constructor(
    @Inject(FACILITATOR_CONFIG) private readonly config: FacilitatorConfig,
    private readonly failures: AuthFailureLimiter,
  ) {
    this.tokenDigest = config.operatorToken === undefined ? undefined : digest(config.operatorToken);
  }

  onModuleInit(): void {
    if (this.config.role === 'worker') return; // a worker process serves no API at all
    if (this.tokenDigest) this.logger.log('operator API on: /admin and /admin/queues take Authorization: Bearer <OPERATOR_TOKEN>');
    else this.logger.warn('operator API off: OPERATOR_TOKEN is not set, so /admin and /admin/queues answer 404');
  }

  /**
   * Returns when the request carries the operator token; otherwise throws the problem that refuses it (setting
   * WWW-Authenticate or Retry-After on the response). `basic`: also take the token as the password of HTTP Basic,
   * which a browser asks for (bull-board's pages).
   */
  async authorize(request: Request, response: Response, options: { basic?: boolean } = {}): Promise<void> {
    if (!this.tokenDigest) throw new ProblemError('not_found', 'the operator API is disabled on this facilitator (OPERATOR_TOKEN is not set)');
    const presented = presentedToken(request.headers.authorization, options.basic === true);
    const address = request.ip ?? request.socket.remoteAddress ?? 'unknown';
    const locked = await this.failures.lockedFor(address);
    if (locked) {
      response.setHeader('retry-after', String(locked));
      throw new ProblemError('rate_limited', `too many failed authentication attempts from this address; retry in ${locked} s`, { retryAfter: locked });
    }
    if (presented !== undefined && timingSafeEqual(digest(presented), this.tokenDigest)) return;
    if (presented !== undefined) await this.failures.recordFailure(address);
    response.setHeader('www-authenticate', options.basic ? 'Bearer realm="operator", Basic realm="operator"' : 'Bearer realm="operator"');
    throw new ProblemError('unauthorized', 'the operator token is required (Authorization: Bearer <OPERATOR_TOKEN>)');
  }
}

/** Guards the operator API's controllers. */
@Injectable()
export class OperatorGuard implements CanActivate {
  constructor(private readonly auth: OperatorAuth) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const http = context.switchToHttp();
    await this.auth.authorize(http.getRequest<Request>(), http.getResponse<Response>());
    return true;
  }
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/** The token of `Bearer <token>`, or (when allowed) the password of `Basic base64(<any user>:<token>)`. */
function presentedToken(authorization: string | undefined, basic: boolean): string | undefined {
  if (typeof authorization !== 'string') return undefined;
  const bearer = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization);
  if (bearer) return bearer[1];
  const credentials = basic ? /^Basic[ \t]+([A-Za-z0-9+/=]+)[ \t]*$/i.exec(authorization) : null;
  if (credentials) {
    const decoded = Buffer.from(credentials[1], 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon >= 0) return decoded.slice(colon + 1);
  }
  return authorization.trim() ? authorization.trim() : undefined;
}
