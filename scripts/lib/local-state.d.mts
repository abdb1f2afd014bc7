export function queuePrefixFor(databaseUrl: string): string;
export function resetLocalState(options: { databaseUrl: string; redisUrl?: string }): Promise<void>;
