import { randomUUID } from 'node:crypto';
import { TaskState, type Task } from '@a2a-js/sdk';
import { ResultManager, ServerCallContext } from '@a2a-js/sdk/server';
import { PrismaService } from '@mp/db';
import { PgTaskStore } from '../src/a2a/pg-task-store';
import { agentMessage, artifact, dataPart, taskSnapshot, taskStatus } from '../src/a2a/task-events';

/**
 * The task store reads a task once per request and saves on the version it read: counted here in PostgreSQL's own
 * statistics, and raced with writes from other requests (another replica's store on the same table), which are
 * merged, never lost.
 */
describe('PgTaskStore: one read per request, concurrent writes merged', () => {
  const db = new PrismaService({ url: process.env.DATABASE_URL });
  const store = new PgTaskStore(db);
  const replica = new PgTaskStore(db);

  beforeAll(() => db.$connect());
  afterAll(() => db.$disconnect());

  const request = () => new ServerCallContext({ tenant: 't' });
  const scopeOf = (task: Task) => ({ taskId: task.id, contextId: task.contextId });
  const say = (task: Task, text: string) => agentMessage(scopeOf(task), text);
  const status = (task: Task, state: TaskState, text: string, metadata?: Record<string, unknown>) =>
    ({ kind: 'statusUpdate', data: { ...scopeOf(task), status: taskStatus(state, say(task, text)), metadata } }) as const;
  const artifactUpdate = (task: Task, name: string) =>
    ({
      kind: 'artifactUpdate',
      data: { ...scopeOf(task), artifact: artifact(name, dataPart({ name })), append: false, lastChunk: true, metadata: undefined },
    }) as const;
  const opened = (): Task => {
    const scope = { id: randomUUID(), contextId: randomUUID() };
    return {
      ...taskSnapshot(
        { ...scope, history: [], metadata: { skill: 'forecast' } },
        taskStatus(TaskState.TASK_STATE_INPUT_REQUIRED, agentMessage({ taskId: scope.id, contextId: scope.contextId }, 'pay')),
      ),
    };
  };
  const row = (id: string) =>
    db.a2aTask.findUniqueOrThrow({ where: { id }, select: { state: true, version: true, history: true, artifacts: true, metadata: true } });
  const texts = (history: unknown) => (history as { parts: { text?: string }[] }[]).map((m) => m.parts[0].text);
  /** The store's reads of the task from PostgreSQL while `work` runs. */
  const reads = async (s: PgTaskStore, work: () => Promise<unknown>) => {
    const read = vi.spyOn(s as unknown as { read: () => Promise<unknown> }, 'read');
    try {
      await work();
      return read.mock.calls.length;
    } finally {
      read.mockRestore();
    }
  };

  it("reads a task once in a request that loads and saves it many times, as the SDK's ResultManager does", async () => {
    const task = opened();
    await store.save(task, request());
    const context = request();
    const results = new ResultManager(store, context);
    const steps = 4;
    const n = await reads(store, async () => {
      for (let i = 0; i < steps; i++) await results.processEvent(status(task, TaskState.TASK_STATE_WORKING, `step ${i}`));
      await store.load(task.id, context);
    });
    expect(n).toBe(1);
    const saved = await row(task.id);
    expect(saved.state).toBe('TASK_STATE_WORKING');
    expect(saved.version).toBe(steps);
    expect(texts(saved.history)).toEqual(['pay', 'step 0', 'step 1', 'step 2', 'step 3']);
    // Another request reads what was written.
    expect((await store.load(task.id, request()))?.history).toHaveLength(steps + 1);
  });

  it("merges another request's write made between this request's read and its save (another replica's, here)", async () => {
    const task = opened();
    await store.save(task, request());
    const ours = request();
    const mine = new ResultManager(store, ours);
    await mine.processEvent(status(task, TaskState.TASK_STATE_WORKING, 'mine 1'));
    // Another replica adds an artifact, a message and a metadata key meanwhile.
    const theirs = new ResultManager(replica, request());
    await theirs.processEvent(artifactUpdate(task, 'theirs'));
    await theirs.processEvent(status(task, TaskState.TASK_STATE_WORKING, 'theirs', { by: 'replica' }));
    // This request goes on from what it saw: its next saves must not lose any of that.
    const n = await reads(store, async () => {
      await mine.processEvent(artifactUpdate(task, 'mine'));
      await mine.processEvent(status(task, TaskState.TASK_STATE_COMPLETED, 'mine 2', { done: true }));
    });
    expect(n).toBe(1); // the conflict's one read
    const saved = await row(task.id);
    expect(saved.state).toBe('TASK_STATE_COMPLETED');
    expect(texts(saved.history)).toEqual(['pay', 'mine 1', 'theirs', 'mine 2']);
    expect((saved.artifacts as { name: string }[]).map((a) => a.name).sort()).toEqual(['mine', 'theirs']);
    expect(saved.metadata).toEqual({ skill: 'forecast', by: 'replica', done: true });
    // What this request answers with is what was written.
    expect((await store.load(task.id, ours))?.history).toHaveLength(4);
  });

  it('never writes another state over a task another request ended meanwhile', async () => {
    const task = opened();
    await store.save(task, request());
    const ours = request();
    const loaded = (await store.load(task.id, ours))!;
    const other = request();
    const canceled = (await replica.load(task.id, other))!;
    canceled.status = taskStatus(TaskState.TASK_STATE_CANCELED, say(task, 'canceled'));
    await replica.save(canceled, other);
    loaded.status = taskStatus(TaskState.TASK_STATE_WORKING, say(task, 'working'));
    await store.save(loaded, ours);
    expect((await row(task.id)).state).toBe('TASK_STATE_CANCELED');
    // and the request now sees the task as it is
    expect((await store.load(task.id, ours))?.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
  });

  it("keeps tasks apart by scope: another tenant's save of the same id changes nothing", async () => {
    const task = opened();
    await store.save(task, request());
    const stranger = new ServerCallContext({ tenant: 'other' });
    await store.save({ ...task, status: taskStatus(TaskState.TASK_STATE_COMPLETED, say(task, 'mine now')) }, stranger);
    expect((await row(task.id)).state).toBe('TASK_STATE_INPUT_REQUIRED');
    expect(await store.load(task.id, stranger)).toBeUndefined();
  });

  it('loses no message when 12 requests on two replicas save one task at once', async () => {
    const task = opened();
    await store.save(task, request());
    await Promise.all(
      Array.from({ length: 12 }, async (_, i) => {
        const s = i % 2 ? store : replica;
        const context = request();
        const loaded = (await s.load(task.id, context))!;
        loaded.history = [...loaded.history, say(task, `m${i}`)];
        await s.save(loaded, context);
      }),
    );
    const saved = await row(task.id);
    expect(texts(saved.history).sort()).toEqual(['pay', ...Array.from({ length: 12 }, (_, i) => `m${i}`)].sort());
  });
});
