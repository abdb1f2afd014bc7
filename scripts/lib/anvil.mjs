// Starts anvil (the binary that ships in the @foundry-rs/anvil-<os>-<arch> npm package) on 127.0.0.1.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import path from 'node:path';

const require = createRequire(import.meta.url);

export const TEST_MNEMONIC = 'test test test test test test test test test test test junk';

const ARCH = { x64: 'amd64', arm64: 'arm64' };

/** Absolute path of the anvil binary from the platform package (resolved, not hard-coded). */
export function anvilBinary() {
  const pkg = `@foundry-rs/anvil-${process.platform}-${ARCH[process.arch] ?? process.arch}`;
  let dir;
  try {
    dir = path.dirname(require.resolve(`${pkg}/package.json`));
  } catch {
    throw new Error(`anvil binary package ${pkg} is not installed (it is an optional dependency of @foundry-rs/anvil)`);
  }
  const bin = path.join(dir, 'bin', process.platform === 'win32' ? 'anvil.exe' : 'anvil');
  if (!fs.existsSync(bin)) throw new Error(`anvil binary missing at ${bin}`);
  return bin;
}

function assertPortFree(port) {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', (err) => {
      reject(err.code === 'EADDRINUSE' ? new Error(`Cannot start anvil: 127.0.0.1:${port} is already in use (another chain running?)`) : err);
    });
    srv.listen({ port, host: '127.0.0.1', exclusive: true }, () => srv.close(() => resolve()));
  });
}

async function rpc(rpcUrl, method, params = [], timeoutMs = 1000) {
  const res = await fetch(rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const body = await res.json();
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Spawn anvil and wait until it answers eth_chainId.
 * @param {{ port: number, host?: string, chainId?: number, accounts?: number, blockTime?: number, mnemonic?: string, readyTimeoutMs?: number }} opts
 * @returns {Promise<{ rpcUrl: string, port: number, chainId: number, pid: number, stop: () => Promise<void> }>}
 */
export async function startAnvil({
  port,
  host = '127.0.0.1',
  chainId = 31337,
  accounts = 20,
  blockTime,
  mnemonic = TEST_MNEMONIC,
  readyTimeoutMs = 10_000,
} = {}) {
  if (!Number.isInteger(port) || port <= 0 || port > 65535) throw new Error(`startAnvil: invalid port ${port}`);
  await assertPortFree(port);

  const args = ['--host', host, '--port', String(port), '--chain-id', String(chainId), '--accounts', String(accounts), '--mnemonic', mnemonic, '--silent'];
  if (blockTime !== undefined) args.push('--block-time', String(blockTime));

  const child = spawn(anvilBinary(), args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (d) => {
    if (stderr.length < 8192) stderr += d;
  });
  let exited = null;
  let spawnError = null;
  const exitPromise = new Promise((resolve) => {
    child.once('exit', (code, signal) => {
      exited = { code, signal };
      resolve();
    });
    child.once('error', (err) => {
      spawnError = err;
      exited ??= { code: null, signal: null };
      resolve();
    });
  });
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);

  const rpcUrl = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + readyTimeoutMs;
  for (;;) {
    if (exited) {
      process.removeListener('exit', killOnExit);
      const why = spawnError ? spawnError.message : `exit code ${exited.code ?? exited.signal}`;
      throw new Error(`anvil exited before it was ready (${why})${stderr ? `:\n${stderr.trim()}` : ''}`);
    }
    const id = await rpc(rpcUrl, 'eth_chainId', [], 500).catch(() => undefined);
    if (id !== undefined && !exited) {
      if (Number(id) === chainId) break;
      child.kill('SIGKILL');
      process.removeListener('exit', killOnExit);
      throw new Error(`anvil on ${rpcUrl} reports chain ${Number(id)}, expected ${chainId}`);
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      process.removeListener('exit', killOnExit);
      throw new Error(`anvil did not answer on ${rpcUrl} within ${readyTimeoutMs} ms${stderr ? `:\n${stderr.trim()}` : ''}`);
    }
    await sleep(25);
  }

  let stopping;
  const stop = () => {
    stopping ??= (async () => {
      process.removeListener('exit', killOnExit);
      if (exited) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
      await exitPromise;
      clearTimeout(timer);
    })();
    return stopping;
  };

  return { rpcUrl, port, chainId, pid: child.pid, stop };
}
