// Types for scripts/lib/database.mjs (so TypeScript callers such as test/global-setup.ts can import it).
export declare const ROOT: string;
export declare const SCHEMA_PATH: string;
export declare const MIGRATIONS_DIR: string;
export declare const SNAPSHOT_FILE: string;
export declare const DEFAULT_DATABASE_URL: string;
export declare const MIGRATION_LOCK_TOML: string;

export interface MigrateDeployOptions {
  /** defaults to $DATABASE_URL, then postgresql://postgres@127.0.0.1:5432/machine_payments */
  databaseUrl?: string;
  /** print nothing */
  quiet?: boolean;
  migrationsDir?: string;
  schemaPath?: string;
}
export interface MigrateDeployResult {
  /** names of the migrations applied by this call, in order; empty when up to date */
  applied: string[];
  /** true when this call created the database */
  created: boolean;
}
export declare function migrateDeploy(options?: MigrateDeployOptions): Promise<MigrateDeployResult>;

export interface CreateMigrationOptions {
  name: string;
  quiet?: boolean;
  migrationsDir?: string;
  schemaPath?: string;
}
export declare function createMigration(options: CreateMigrationOptions): Promise<{ dir: string | null }>;

export declare function resolveDatabaseUrl(databaseUrl?: string): string;
export declare function ensureDatabase(databaseUrl?: string): Promise<boolean>;
export declare function dropDatabase(databaseUrl?: string): Promise<void>;
export declare function redact(databaseUrl: string): string;
export declare function readMigrationsList(migrationsDir?: string): unknown;
