// @mp/clients — what merchants and other services use to talk to ours (no Nest).
export * from './webhooks';
export * from './mpp-facilitator';
export * from './payment-events';
export * from './channel-events';
export * from './merchant-notices';
export * from './subscription-commands';
