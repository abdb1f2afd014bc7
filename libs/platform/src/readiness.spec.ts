import { createServer } from 'node:net';
import { ProblemError } from './problem';
import { describeError, Readiness, redisCheck } from './readiness';

describe('Readiness', () => {
  it("is ready when every check passes, with each check's detail", async () => {
    const readiness = new Readiness();
    readiness.register('database', async () => undefined);
    readiness.register('eip155:1', async () => 'block 42');
    expect(await readiness.assertReady()).toEqual({ status: 'ready', checks: { database: 'ok', 'eip155:1': 'ok (block 42)' } });
  });

  it('names what is down in a 503 upstream_unavailable problem, with every check, and bounds each check', async () => {
    const readiness = new Readiness(50);
    readiness.register('database', async () => undefined);
    readiness.register('redis', () => Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:6390\n    at stack')));
    let aborted = false;
    readiness.register('slow', (signal) => {
      signal.addEventListener('abort', () => (aborted = true));
      return new Promise(() => undefined);
    });
    // A check that never settles does not hold the answer: it is aborted and reported as timed out.
    const error = await readiness.assertReady().catch((e: unknown) => e);
    expect(aborted).toBe(true);
    expect(error).toBeInstanceOf(ProblemError);
    const problem = error as ProblemError;
    expect(problem.code).toBe('upstream_unavailable');
    expect(problem.status).toBe(503);
    expect(problem.message).toBe('not ready: redis, slow unavailable');
    expect(problem.extensions).toEqual({
      health: 'degraded',
      checks: { database: 'ok', redis: 'down: connect ECONNREFUSED 127.0.0.1:6390', slow: 'down: timed out after 50 ms' },
    });
  });

  it('replaces and removes checks', async () => {
    const readiness = new Readiness();
    const remove = readiness.register('a', async () => 'one');
    readiness.register('a', async () => 'two');
    remove();
    expect(readiness.names()).toEqual(['a']);
    expect((await readiness.run()).checks).toEqual({ a: 'ok (two)' });
  });

  it('describes errors in one line without credentials or URL paths', () => {
    expect(describeError(new Error('HTTP request failed.\n\nURL: https://base-mainnet.example/v2/KEY123\nRequest body: {}'))).toBe('HTTP request failed.');
    expect(describeError(new Error('cannot reach https://user:pa55word@rpc.example.com/v2/KEY123?x=1 now'))).toBe('cannot reach https://rpc.example.com now');
    expect(describeError(Object.assign(new TypeError('fetch failed'), { cause: new Error('connect ECONNREFUSED 127.0.0.1:4020') }))).toBe(
      'fetch failed: connect ECONNREFUSED 127.0.0.1:4020',
    );
    expect(describeError('x'.repeat(500))).toHaveLength(200);
  });

  it('redisCheck names the connection error of an unreachable Redis', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    await new Promise((resolve) => server.close(resolve));
    const readiness = new Readiness();
    readiness.register('redis', redisCheck(`redis://127.0.0.1:${port}`));
    expect((await readiness.run()).checks.redis).toBe(`down: connect ECONNREFUSED 127.0.0.1:${port}`);
  });
});
