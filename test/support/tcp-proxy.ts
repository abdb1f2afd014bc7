import { createServer, connect, type Server, type Socket } from 'node:net';

export type ProxyMode = 'pass' | 'refuse' | 'hang' | 'swallow';

/**
 * A TCP proxy on 127.0.0.1 in front of a local service, which a test can break: `refuse` drops every connection
 * (open ones too), `hang` accepts and never answers, `swallow` forwards requests but loses every answer (the
 * service acted, the caller never hears), `pass` forwards again.
 */
export interface TcpProxy {
  port: number;
  url(scheme: string, path?: string): string;
  set(mode: ProxyMode): void;
  close(): Promise<void>;
}

export async function startTcpProxy(targetPort: number): Promise<TcpProxy> {
  let mode: ProxyMode = 'pass';
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    client.on('error', () => undefined);
    if (mode === 'refuse') return client.destroy();
    if (mode === 'hang') return;
    const upstream = connect(targetPort, '127.0.0.1');
    sockets.add(upstream);
    upstream.on('close', () => sockets.delete(upstream));
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    client.pipe(upstream);
    if (mode === 'swallow') upstream.resume();
    else upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    url: (scheme, path = '') => `${scheme}://127.0.0.1:${port}${path}`,
    set(next) {
      mode = next;
      if (next !== 'pass') for (const socket of sockets) socket.destroy();
    },
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
