import type { IncomingHttpHeaders } from 'node:http';
import { type CanActivate, type ExecutionContext, Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import { ProblemError } from '@mp/platform';
import { presentedApiKey } from './api-key';
import type { MerchantRequest } from './current-merchant';
import { MerchantDirectory, type Merchant } from './merchant-directory';

/**
 * Requires a merchant's API key (`Authorization: Bearer mpk_…` or `X-API-Key`). Missing, malformed, unknown and
 * revoked keys get the same 401, so the answer never tells whether a key exists.
 */
@Injectable()
export class MerchantAuthGuard implements CanActivate {
  constructor(private readonly directory: MerchantDirectory) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const http = context.switchToHttp();
    const request = http.getRequest<Request & MerchantRequest>();
    request.merchant = await this.authenticate(request, http.getResponse<Response>());
    return true;
  }

  /** The id of the merchant whose key the request presents (reconciliation's MerchantResolver). */
  async merchantOf(request: Request, response: Response): Promise<string> {
    return (await this.authenticate(request, response)).merchantId;
  }

  private authenticate(request: Request, response: Response): Promise<Merchant> {
    return this.authorize(request.headers, request.ip, (name, value) => response.setHeader(name, value));
  }

  /** The merchant a request's key names (`address`: its client's, for the failed-key count), or a thrown 401 or 429, its header set. */
  async authorize(headers: IncomingHttpHeaders, address: string | undefined, setHeader: (name: string, value: string) => void): Promise<Merchant> {
    const key = presentedApiKey(headers);
    const merchant =
      key === undefined
        ? undefined
        : await this.directory.resolve(key, address).catch((error: unknown) => {
            if (error instanceof ProblemError && error.code === 'rate_limited') setHeader('retry-after', String(error.extensions.retryAfter));
            throw error;
          });
    if (!merchant) {
      setHeader('www-authenticate', 'Bearer realm="ledger"');
      throw new ProblemError('unauthorized', 'a valid API key is required (Authorization: Bearer <key> or X-API-Key)');
    }
    return merchant;
  }
}
