import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { Merchant } from './merchant-directory';

export interface MerchantRequest {
  merchant?: Merchant;
}

/** The merchant the request's API key belongs to (set by MerchantAuthGuard). */
export const CurrentMerchant = createParamDecorator((_data: unknown, context: ExecutionContext): Merchant => {
  return context.switchToHttp().getRequest<MerchantRequest>().merchant!;
});
