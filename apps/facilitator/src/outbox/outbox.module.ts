import { Module } from '@nestjs/common';
import { OutboxRelay } from './outbox.relay';

/** The transactional outbox's publisher: payment events to the ledger over BullMQ. */
@Module({ providers: [OutboxRelay] })
export class OutboxModule {}
