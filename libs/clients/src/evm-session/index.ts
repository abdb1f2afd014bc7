// @mp/clients/evm-session: the buyer side of the MPP evm `session` intent (channels in our escrow, vouchers, SSE).
// A subpath rather than the package root: the published @machine-payments/clients carries zod only, and this needs
// viem and the session codec of @mp/mpp.
export * from './channel-client';
export * from './session-stream';
export * from './sse';
