import type { IncomingHttpHeaders } from 'node:http';
import { type CanActivate, type ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request, Response } from 'express';
import { ProblemError } from '@mp/platform';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../config/facilitator.config';
import { presentedApiKey } from './api-key';
import { OPEN_MODE_ALLOWED, type MerchantRequest } from './current-merchant';
import { MerchantAuth, type MerchantPrincipal } from './merchant-auth.service';
import { AuthFailureLimiter } from './auth-failure-limiter';
import { RateLimiter } from './rate-limiter';

/**
 * Requires a valid merchant API key (`Authorization: Bearer <key>` or `X-API-Key: <key>`), then takes one token
 * from the key's rate limit. Missing, malformed, unknown and revoked keys and disabled merchants all get the very
 * same 401, so the answer never tells whether a merchant or key exists. A route marked {@link OpenModeAllowed}
 * also takes requests without any key when FACILITATOR_OPEN_MODE is on, limited per client address
 * (OPEN_MODE_RATE_LIMIT_PER_MINUTE); a key that is present is checked anyway.
 */
@Injectable()
export class MerchantAuthGuard implements CanActivate {
  constructor(
    @Inject(FACILITATOR_CONFIG) private readonly config: FacilitatorConfig,
    private readonly auth: MerchantAuth,
    private readonly limiter: RateLimiter,
    private readonly failures: AuthFailureLimiter,
    private readonly reflector: Reflector,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const http = context.switchToHttp();
    const request = http.getRequest<Request & MerchantRequest>();
    const response = http.getResponse<Response>();
    const openAllowed = this.reflector.getAllAndOverride<boolean>(OPEN_MODE_ALLOWED, [context.getHandler(), context.getClass()]) ?? false;
    const address = request.ip ?? request.socket.remoteAddress ?? 'unknown';
    request.merchant = await this.authorize(request.headers, address, openAllowed, (name, value) => response.setHeader(name, value));
    return true;
  }

  /**
   * The merchant a request's key authenticates, or undefined for a request without a key that open mode lets
   * through (`openAllowed`: the route is {@link OpenModeAllowed}); otherwise throws the 401 or 429, its header set.
   */
  async authorize(
    headers: IncomingHttpHeaders,
    address: string,
    openAllowed: boolean,
    setHeader: (name: string, value: string) => void,
  ): Promise<MerchantPrincipal | undefined> {
    const key = presentedApiKey(headers);
    if (key === undefined) {
      if (!this.config.openMode || !openAllowed) throw unauthorized(setHeader);
      // Without a key nobody answers for the traffic: each client address gets its own budget.
      const verdict = await this.limiter.consumeOpen(address);
      if (!verdict.allowed) throw rateLimited(setHeader, verdict.retryAfterSeconds, 'too many requests without an API key from this address');
      return undefined;
    }
    // An address that keeps presenting bad keys is slowed down before its key is looked at.
    const locked = await this.failures.lockedFor(address);
    if (locked) throw rateLimited(setHeader, locked, 'too many failed API-key attempts from this address');
    const merchant = await this.auth.authenticate(key);
    if (!merchant) {
      await this.failures.recordFailure(address);
      throw unauthorized(setHeader);
    }
    const verdict = await this.limiter.consume(merchant.keyId);
    if (!verdict.allowed) throw rateLimited(setHeader, verdict.retryAfterSeconds, 'too many requests with this API key');
    return merchant;
  }
}

function rateLimited(setHeader: (name: string, value: string) => void, seconds: number, what: string): ProblemError {
  setHeader('retry-after', String(seconds));
  return new ProblemError('rate_limited', `${what}; retry in ${seconds} s`, { retryAfter: seconds });
}

function unauthorized(setHeader: (name: string, value: string) => void): ProblemError {
  setHeader('www-authenticate', 'Bearer realm="facilitator"');
  return new ProblemError('unauthorized', 'a valid API key is required');
}
