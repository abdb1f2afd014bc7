import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import { Queue } from 'bullmq';
import type { Express, NextFunction, Request, Response } from 'express';
import { Redis } from 'ioredis';
import { MERCHANT_NOTICES_QUEUE, PAYMENT_EVENTS_ACKS_QUEUE, PAYMENT_EVENTS_QUEUE } from '@mp/clients';
import { PROBLEM_CONTENT_TYPE, problemBody, ProblemError } from '@mp/platform';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../config/facilitator.config';
import { SETTLEMENT_QUEUE } from '../settlement/settlement.queue';
import { OperatorAuth } from './operator-auth';

export const QUEUES_BOARD_PATH = '/admin/queues';

/** Every queue the facilitator produces to or consumes from, under its QUEUE_PREFIX. */
export const FACILITATOR_QUEUES = [SETTLEMENT_QUEUE, PAYMENT_EVENTS_QUEUE, MERCHANT_NOTICES_QUEUE, PAYMENT_EVENTS_ACKS_QUEUE] as const;

/**
 * bull-board at /admin/queues behind the operator token (a browser may give it as the password of HTTP Basic, any
 * user name): jobs of every facilitator queue, with retry, promote and clean. Express routes of its own, mounted on
 * Nest's Express instance once the controllers are (so /admin/merchants… stay Nest's); a worker-only process does
 * not serve it. Its Redis connection is opened only when OPERATOR_TOKEN is set.
 */
@Injectable()
export class QueuesBoard implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(QueuesBoard.name);
  private connection: Redis | undefined;
  private queues: Queue[] = [];

  constructor(
    @Inject(FACILITATOR_CONFIG) private readonly config: FacilitatorConfig,
    private readonly adapterHost: HttpAdapterHost,
    private readonly auth: OperatorAuth,
  ) {}

  onModuleInit(): void {
    const http = this.adapterHost.httpAdapter;
    if (!http || this.config.role === 'worker') return;
    const app = http.getInstance<Express>();
    const guard = (req: Request, res: Response, next: NextFunction) => {
      this.auth.authorize(req, res, { basic: true }).then(() => next(), (error: unknown) => refuse(error, req, res));
    };
    if (!this.config.operatorToken) {
      app.use(QUEUES_BOARD_PATH, guard); // answers the "disabled" 404
      return;
    }
    this.connection = new Redis(this.config.redisUrl, { maxRetriesPerRequest: 1, connectTimeout: 2_000 });
    this.connection.on('error', (error: Error) => this.logger.debug(`redis: ${error.message}`));
    this.queues = FACILITATOR_QUEUES.map((name) => new Queue(name, { connection: this.connection!, prefix: this.config.queuePrefix }));
    for (const queue of this.queues) queue.on('error', (error: Error) => this.logger.debug(`queue ${queue.name}: ${error.message}`));
    const board = new ExpressAdapter();
    board.setBasePath(QUEUES_BOARD_PATH);
    createBullBoard({ queues: this.queues.map((queue) => new BullMQAdapter(queue)), serverAdapter: board, options: { uiConfig: { boardTitle: 'Facilitator queues' } } });
    app.use(QUEUES_BOARD_PATH, guard, board.getRouter());
  }

  async onModuleDestroy(): Promise<void> {
    await Promise.race([Promise.all(this.queues.map((q) => q.close().catch(() => undefined))), new Promise((resolve) => setTimeout(resolve, 2_000).unref())]);
    this.connection?.disconnect();
  }
}

function refuse(error: unknown, req: Request, res: Response): void {
  const body =
    error instanceof ProblemError
      ? problemBody(error.code, error.message, req.originalUrl, error.extensions)
      : problemBody('upstream_unavailable', 'the operator token could not be checked; retry shortly', req.originalUrl);
  res.status(body.status).setHeader('content-type', PROBLEM_CONTENT_TYPE).setHeader('cache-control', 'no-store').end(JSON.stringify(body));
}
