import type { INestApplication } from '@nestjs/common';
import type { HotRoute } from '@mp/platform';
import { MerchantAuthGuard } from '../auth/merchant-auth.guard';
import { TransferBatchPipe } from './requests';
import { TransfersController } from './transfers.controller';

/**
 * POST /transfers for `serveHotRoutes`: the guard's own check, then the pipe's own parsing, then the controller's own
 * method, in Nest's order (guard before pipe), so the route answers as it does through Nest
 * (apps/ledger/test/hot-routes.e2e-spec.ts compares the two).
 */
export function transfersHotRoutes(app: INestApplication): HotRoute[] {
  const controller = app.get(TransfersController);
  const guard = app.get(MerchantAuthGuard);
  const pipe = app.get(TransferBatchPipe);
  return [
    {
      path: '/transfers',
      handle: async (body, request) => {
        const merchant = await guard.authorize(request.headers, request.clientAddress, request.setHeader);
        request.merchantId = merchant.merchantId;
        return controller.create(merchant, pipe.transform(body));
      },
    },
  ];
}
