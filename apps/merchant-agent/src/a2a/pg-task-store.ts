import { Injectable } from '@nestjs/common';
import { Task, TaskState, taskStateToJSON, type ListTasksRequest, type ListTasksResponse } from '@a2a-js/sdk';
import { RequestMalformedError } from '@a2a-js/sdk/errors';
import { resolveUserScope, type ServerCallContext, type TaskStore } from '@a2a-js/sdk/server';
import { Prisma, PrismaService } from '@mp/db';

interface TaskRow {
  id: string;
  contextId: string;
  statusTimestamp: Date;
  status: unknown;
  artifacts: unknown;
  history: unknown;
  metadata: unknown;
}

/** Task.toJSON's shape, as far as the columns need it. */
interface TaskJson {
  status?: { state?: string; timestamp?: string };
  artifacts?: unknown[];
  history?: unknown[];
  metadata?: unknown;
}

/** The SDK's default when a ListTasks request names no page size (it passes its default along anyway). */
const DEFAULT_PAGE_SIZE = 50;

/** A task's tenant and owner (the SDK's user scope): a task is only ever read or written within them. */
export interface TaskScope {
  tenant: string;
  owner: string;
}
const TERMINAL_STATES = ['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED'];
const COLUMNS = `id, context_id AS "contextId", status_timestamp AS "statusTimestamp", status, artifacts, history, metadata`;
/** COLUMNS for Prisma Client. */
const TASK_ROW = {
  id: true,
  contextId: true,
  statusTimestamp: true,
  status: true,
  artifacts: true,
  history: true,
  metadata: true,
} satisfies Prisma.A2aTaskSelect;

/**
 * The SDK's TaskStore over merchant.a2a_tasks: each save writes the whole task (ProtoJSON), scoped by tenant and
 * owner as the SDK's in-memory store is. A terminal task is never overwritten with another state, even by a save
 * racing on another replica (the SDK's own guard is an in-process lock).
 */
@Injectable()
export class PgTaskStore implements TaskStore {
  constructor(private readonly db: PrismaService) {}

  async save(task: Task, context: ServerCallContext): Promise<void> {
    await this.saveIn({ tenant: context.tenant ?? '', owner: resolveUserScope(context) }, task);
  }

  async load(taskId: string, context: ServerCallContext): Promise<Task | undefined> {
    return this.loadIn({ tenant: context.tenant ?? '', owner: resolveUserScope(context) }, taskId);
  }

  /** Where a task is kept, for work on it outside any request (PendingSettlements); undefined for an unknown task. */
  async scopeOf(taskId: string): Promise<(TaskScope & { contextId: string }) | undefined> {
    return (await this.db.a2aTask.findUnique({ where: { id: taskId }, select: { tenant: true, owner: true, contextId: true } })) ?? undefined;
  }

  /** The store as seen by the task's own caller: what the SDK's ResultManager saves through, outside a request. */
  within(scope: TaskScope): TaskStore {
    return {
      save: (task) => this.saveIn(scope, task),
      load: (taskId) => this.loadIn(scope, taskId),
      list: () => Promise.reject(new Error('not listed outside a request')),
    };
  }

  /** SQL: an upsert guarded by the row it would overwrite (ON CONFLICT … DO UPDATE … WHERE), which Prisma's upsert cannot express. */
  private async saveIn(scope: TaskScope, task: Task): Promise<void> {
    const json = Task.toJSON(task) as TaskJson;
    await this.db.$executeRawUnsafe(
      `INSERT INTO merchant.a2a_tasks (id, tenant, owner, context_id, state, status_timestamp, status, artifacts, history, metadata)
       VALUES ($1, $2, $3, $4, $5, COALESCE($6::timestamptz, now()), $7::jsonb, $8::jsonb, $9::jsonb, $10::jsonb)
       ON CONFLICT (id) DO UPDATE SET
         context_id = EXCLUDED.context_id, state = EXCLUDED.state, status_timestamp = EXCLUDED.status_timestamp,
         status = EXCLUDED.status, artifacts = EXCLUDED.artifacts, history = EXCLUDED.history, metadata = EXCLUDED.metadata,
         updated_at = now()
       WHERE a2a_tasks.tenant = EXCLUDED.tenant AND a2a_tasks.owner = EXCLUDED.owner
         AND (a2a_tasks.state <> ALL($11::text[]) OR a2a_tasks.state = EXCLUDED.state)`,
      task.id,
      scope.tenant,
      scope.owner,
      task.contextId,
      json.status?.state ?? taskStateToJSON(TaskState.TASK_STATE_UNSPECIFIED),
      json.status?.timestamp ?? null,
      JSON.stringify(json.status ?? {}),
      JSON.stringify(json.artifacts ?? []),
      JSON.stringify(json.history ?? []),
      json.metadata === undefined ? null : JSON.stringify(json.metadata),
      TERMINAL_STATES,
    );
  }

  private async loadIn(scope: TaskScope, taskId: string): Promise<Task | undefined> {
    const row = await this.db.a2aTask.findFirst({ where: { id: taskId, tenant: scope.tenant, owner: scope.owner }, select: TASK_ROW });
    return row ? toTask(row) : undefined;
  }

  /**
   * Newest status first, then by id; the page token is the last task's (status timestamp, id). SQL: PostgreSQL parses
   * the request's timestamp text, as it always has, so a caller's odd but valid timestamp means what it meant.
   */
  async list(params: ListTasksRequest, context: ServerCallContext): Promise<ListTasksResponse> {
    const pageSize = params.pageSize ?? DEFAULT_PAGE_SIZE;
    const after = params.pageToken ? decodePageToken(params.pageToken) : undefined;
    const filters = [
      context.tenant ?? '',
      resolveUserScope(context),
      params.contextId || null,
      params.status ? taskStateToJSON(params.status) : null,
      params.statusTimestampAfter ?? null,
    ];
    const where = `tenant = $1 AND owner = $2 AND ($3::text IS NULL OR context_id = $3) AND ($4::text IS NULL OR state = $4)
                   AND ($5::timestamptz IS NULL OR status_timestamp > $5::timestamptz)`;
    const [rows, [{ total }]] = await Promise.all([
      this.db.$queryRawUnsafe<TaskRow[]>(
        `SELECT ${COLUMNS} FROM merchant.a2a_tasks
          WHERE ${where} AND ($6::timestamptz IS NULL OR (status_timestamp, id) < ($6::timestamptz, $7::text))
          ORDER BY status_timestamp DESC, id DESC LIMIT $8`,
        ...filters,
        after?.timestamp ?? null,
        after?.id ?? null,
        pageSize + 1,
      ),
      this.db.$queryRawUnsafe<{ total: number }[]>(`SELECT count(*)::int AS total FROM merchant.a2a_tasks WHERE ${where}`, ...filters),
    ]);
    const page = rows.slice(0, pageSize);
    const last = page.at(-1);
    return {
      tasks: page.map((row) => toTask(params.includeArtifacts ? row : { ...row, artifacts: [] })),
      nextPageToken: rows.length > pageSize && last ? encodePageToken(last) : '',
      pageSize,
      totalSize: total,
    };
  }

  /** A task's context, for an event about a task the SDK already found for its caller (cancellation). */
  async contextIdOf(taskId: string): Promise<string> {
    const row = await this.db.a2aTask.findUnique({ where: { id: taskId }, select: { contextId: true } });
    return row?.contextId ?? '';
  }
}

function toTask(row: TaskRow): Task {
  return Task.fromJSON({
    id: row.id,
    contextId: row.contextId,
    status: row.status,
    artifacts: row.artifacts,
    history: row.history,
    metadata: row.metadata ?? undefined,
  });
}

function encodePageToken(row: TaskRow): string {
  return Buffer.from(JSON.stringify([row.statusTimestamp.toISOString(), row.id])).toString('base64url');
}

function decodePageToken(token: string): { timestamp: string; id: string } {
  try {
    const [timestamp, id] = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as unknown[];
    if (typeof timestamp === 'string' && typeof id === 'string' && !Number.isNaN(Date.parse(timestamp))) return { timestamp, id };
  } catch {
    // falls through to the error below
  }
  throw new RequestMalformedError('pageToken is not a token this agent issued');
}
