export const APPS: string[];
export function appEntry(app: string, file?: string): string;
export function buildIfStale(options?: { env?: NodeJS.ProcessEnv; log?: (line: string) => void }): boolean;
