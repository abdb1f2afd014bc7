/** Flag bits, numbered as TigerBeetle numbers them, so stored flags read the same in both systems. */
export const AccountFlag = {
  linked: 1 << 0,
  debits_must_not_exceed_credits: 1 << 1,
  credits_must_not_exceed_debits: 1 << 2,
} as const;

export const TransferFlag = {
  linked: 1 << 0,
  pending: 1 << 1,
  post_pending_transfer: 1 << 2,
  void_pending_transfer: 1 << 3,
} as const;

export type AccountFlagName = keyof typeof AccountFlag;
export type TransferFlagName = keyof typeof TransferFlag;

export const ACCOUNT_FLAG_NAMES = Object.keys(AccountFlag) as AccountFlagName[];
export const TRANSFER_FLAG_NAMES = Object.keys(TransferFlag) as TransferFlagName[];

export function encodeFlags<N extends string>(names: readonly N[], table: Record<N, number>): number {
  return names.reduce((bits, name) => bits | table[name], 0);
}

export function decodeFlags<N extends string>(bits: number, table: Record<N, number>): N[] {
  return (Object.keys(table) as N[]).filter((name) => (bits & table[name]) !== 0);
}

export const has = (bits: number, flag: number): boolean => (bits & flag) !== 0;
