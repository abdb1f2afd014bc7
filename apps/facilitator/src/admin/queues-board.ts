import { getQueueToken } from '@nestjs/bullmq';
import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost, ModuleRef } from '@nestjs/core';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { Queue } from 'bullmq';
import type { Express, NextFunction, Request, Response } from 'express';
import { MERCHANT_NOTICES_QUEUE, PAYMENT_EVENTS_ACKS_QUEUE, PAYMENT_EVENTS_QUEUE } from '@mp/clients';
import { PROBLEM_CONTENT_TYPE, problemBody, ProblemError } from '@mp/platform';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../config/facilitator.config';
import { MerchantNoticesQueueModule } from '../merchants/webhooks/merchant-notices.consumer';
import { PaymentEventsQueuesModule } from '../outbox/outbox.relay';
import { SETTLEMENT_QUEUE, SettlementQueueModule } from '../settlement/settlement.queue';
import { OperatorAuth } from './operator-auth';

export const QUEUES_BOARD_PATH = '/admin/queues';

/** Every queue the facilitator produces to or consumes from, under its QUEUE_PREFIX. */
export const FACILITATOR_QUEUES = [SETTLEMENT_QUEUE, PAYMENT_EVENTS_QUEUE, MERCHANT_NOTICES_QUEUE, PAYMENT_EVENTS_ACKS_QUEUE] as const;

/** Whether this process serves the board: an api or all process with OPERATOR_TOKEN. */
export function servesQueuesBoard(config: Pick<FacilitatorConfig, 'operatorToken' | 'role'>): boolean {
  return config.operatorToken !== undefined && config.role !== 'worker';
}

/** The registrations of FACILITATOR_QUEUES: the very queues (and connections) the process's own producers and workers use. */
export const QUEUES_BOARD_QUEUES = [SettlementQueueModule, PaymentEventsQueuesModule, MerchantNoticesQueueModule];

/**
 * bull-board at /admin/queues behind the operator token (a browser may give it as the password of HTTP Basic, any
 * user name): jobs of every facilitator queue, with retry, promote and clean. Express routes of its own, mounted on
 * Nest's Express instance once the controllers are (so /admin/merchants… stay Nest's); a worker-only process does
 * not serve it. Its queues are registered only where it is served (AdminModule.forConfig), so it opens no Redis
 * connection elsewhere.
 */
@Injectable()
export class QueuesBoard implements OnModuleInit {
  constructor(
    @Inject(FACILITATOR_CONFIG) private readonly config: FacilitatorConfig,
    private readonly adapterHost: HttpAdapterHost,
    private readonly auth: OperatorAuth,
    private readonly moduleRef: ModuleRef,
  ) {}

  onModuleInit(): void {
    const http = this.adapterHost.httpAdapter;
    if (!http || this.config.role === 'worker') return;
    const app = http.getInstance<Express>();
    const guard = (req: Request, res: Response, next: NextFunction) => {
      this.auth.authorize(req, res, { basic: true }).then(
        () => next(),
        (error: unknown) => refuse(error, req, res),
      );
    };
    if (!this.config.operatorToken) {
      app.use(QUEUES_BOARD_PATH, guard); // answers the "disabled" 404
      return;
    }
    const queues = FACILITATOR_QUEUES.map((name) => this.moduleRef.get<Queue>(getQueueToken(name), { strict: false }));
    const board = new ExpressAdapter();
    board.setBasePath(QUEUES_BOARD_PATH);
    createBullBoard({
      queues: queues.map((queue) => new BullMQAdapter(queue)),
      serverAdapter: board,
      options: { uiConfig: { boardTitle: 'Facilitator queues' } },
    });
    app.use(QUEUES_BOARD_PATH, guard, board.getRouter());
  }
}

function refuse(error: unknown, req: Request, res: Response): void {
  const body =
    error instanceof ProblemError
      ? problemBody(error.code, error.message, req.originalUrl, error.extensions)
      : problemBody('upstream_unavailable', 'the operator token could not be checked; retry shortly', req.originalUrl);
  res.status(body.status).setHeader('content-type', PROBLEM_CONTENT_TYPE).setHeader('cache-control', 'no-store').end(JSON.stringify(body));
}
