import type { INestApplication } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { HotRoute } from '@mp/platform';
import { OPEN_MODE_ALLOWED } from '../merchants/current-merchant';
import { MerchantAuthGuard } from '../merchants/merchant-auth.guard';
import type { MerchantPrincipal } from '../merchants/merchant-auth.service';
import { X402Controller } from './x402.controller';

/**
 * POST /verify and /settle for `serveHotRoutes`: the controller's own methods behind the guard's own check, with the
 * open-mode marking read from the controller, so these routes answer as they do through Nest
 * (apps/facilitator/test/hot-routes.e2e-spec.ts compares the two).
 */
export function x402HotRoutes(app: INestApplication): HotRoute[] {
  const controller = app.get(X402Controller);
  const guard = app.get(MerchantAuthGuard);
  const reflector = app.get(Reflector);
  const route = (
    path: string,
    handler: (...args: never[]) => unknown,
    run: (body: unknown, merchant: MerchantPrincipal | undefined) => Promise<unknown>,
  ): HotRoute => {
    const openAllowed = reflector.getAllAndOverride<boolean>(OPEN_MODE_ALLOWED, [handler, X402Controller]) ?? false;
    return {
      path,
      handle: async (body, request) => {
        const merchant = await guard.authorize(request.headers, request.clientAddress, openAllowed, request.setHeader);
        request.merchantId = merchant?.merchantId;
        return run(body, merchant);
      },
    };
  };
  return [
    route('/verify', X402Controller.prototype.verify, (body, merchant) => controller.verify(body, merchant)),
    route('/settle', X402Controller.prototype.settle, (body, merchant) => controller.settle(body, merchant)),
  ];
}
