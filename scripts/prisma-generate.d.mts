// Types for scripts/prisma-generate.mjs.
export declare function expectedStamp(): string;
export declare function isUpToDate(): boolean;
/** Generates the client into libs/db/src/generated unless it is up to date; resolves true if it ran. */
export declare function generate(options?: { force?: boolean; quiet?: boolean }): Promise<boolean>;
