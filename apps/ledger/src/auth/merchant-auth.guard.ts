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

  private async authenticate(request: Request, response: Response): Promise<Merchant> {
    const key = presentedApiKey(request.headers);
    const merchant =
      key === undefined
        ? undefined
        : await this.directory.resolve(key, request.ip).catch((error: unknown) => {
            if (error instanceof ProblemError && error.code === 'rate_limited') response.setHeader('retry-after', String(error.extensions.retryAfter));
            throw error;
          });
    if (!merchant) {
      response.setHeader('www-authenticate', 'Bearer realm="ledger"');
      throw new ProblemError('unauthorized', 'a valid API key is required (Authorization: Bearer <key> or X-API-Key)');
    }
    return merchant;
  }
}
