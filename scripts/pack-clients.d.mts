/** Builds libs/clients as @machine-payments/clients and packs it into `outDir` (default dist/packages); the tarball's absolute path. */
export function packClients(outDir?: string): string;
