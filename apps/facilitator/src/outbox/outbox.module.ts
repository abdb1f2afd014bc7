import { Module } from '@nestjs/common';
import { OutboxAcks } from './outbox-acks.consumer';
import { OutboxRelay } from './outbox.relay';

/** The transactional outbox to the ledger: payment events published over BullMQ until the ledger acknowledges them. */
@Module({ providers: [OutboxRelay, OutboxAcks] })
export class OutboxModule {}
