// @mp/channels: the pure core of MPP evm `session` channels (the server's book per channel). No Nest, no database,
// no chain: the facilitator verifies signatures and reads the escrow, persists what these functions return, then acts.
export * from './channel';
