import { createParamDecorator, type ExecutionContext, SetMetadata } from '@nestjs/common';
import type { MerchantPrincipal } from './merchant-auth.service';

export interface MerchantRequest {
  merchant?: MerchantPrincipal;
}

/** The merchant the request's API key belongs to; undefined for a request without a key in open mode. */
export const CurrentMerchant = createParamDecorator((_data: unknown, context: ExecutionContext): MerchantPrincipal | undefined => {
  return context.switchToHttp().getRequest<MerchantRequest>().merchant;
});

export const OPEN_MODE_ALLOWED = 'merchants:open-mode-allowed';

/** On a route behind {@link MerchantAuthGuard}: in open mode (FACILITATOR_OPEN_MODE) a request without a key is let through. */
export const OpenModeAllowed = () => SetMetadata(OPEN_MODE_ALLOWED, true);
