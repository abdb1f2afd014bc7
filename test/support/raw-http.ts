import { connect } from 'node:net';

export interface RawAnswer {
  /** The status of the answer, or undefined when the connection ended without one. */
  status?: number;
  head: string;
  body: string;
  /** The socket error that ended the exchange, if any (e.g. ECONNRESET, EPIPE). */
  error?: string;
}

export interface RawPostOptions {
  /** Transfer-Encoding: chunked, or a Content-Length. */
  chunked: boolean;
  /** Bytes per write (and per chunk). Default 64 KiB. */
  writeBytes?: number;
  /**
   * Read only once the whole body is written, as blocking clients do (a plain socket and sendall, then recv);
   * otherwise the answer is read while the body is still going out, as event-loop clients do.
   */
  readAfterWriting?: boolean;
}

/**
 * One POST over a plain TCP socket, so the test decides the framing, the size of each write and when the answer
 * is read. The exchange ends when the server closes the connection (the request asks it to); the answer is whatever
 * arrived by then.
 */
export function rawPost(baseUrl: string, path: string, body: Buffer, options: RawPostOptions): Promise<RawAnswer> {
  const { hostname, port } = new URL(baseUrl);
  const writeBytes = options.writeBytes ?? 64 * 1024;
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    const received: Buffer[] = [];
    let error: string | undefined;
    socket.on('data', (data: Buffer) => received.push(data));
    socket.on('error', (e: NodeJS.ErrnoException) => (error ??= e.code ?? e.message));
    socket.on('close', () => resolve({ ...parseAnswer(Buffer.concat(received).toString('latin1')), error }));

    const framing = options.chunked ? 'transfer-encoding: chunked' : `content-length: ${body.length}`;
    const pieces: Buffer[] = [
      Buffer.from(`POST ${path} HTTP/1.1\r\nhost: ${hostname}:${port}\r\ncontent-type: application/json\r\n${framing}\r\nconnection: close\r\n\r\n`),
    ];
    for (let at = 0; at < body.length; at += writeBytes) {
      const piece = body.subarray(at, at + writeBytes);
      pieces.push(options.chunked ? Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')]) : piece);
    }
    if (options.chunked) pieces.push(Buffer.from('0\r\n\r\n'));

    let next = 0;
    const writeMore = (): void => {
      while (next < pieces.length && !socket.destroyed) {
        const last = next === pieces.length - 1;
        if (!socket.write(pieces[next++], last ? () => socket.resume() : undefined)) return void socket.once('drain', writeMore);
      }
    };
    socket.once('connect', () => {
      if (options.readAfterWriting) socket.pause();
      writeMore();
    });
  });
}

function parseAnswer(text: string): Omit<RawAnswer, 'error'> {
  const end = text.indexOf('\r\n\r\n');
  const head = end === -1 ? text : text.slice(0, end);
  const status = /^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1];
  return { status: status === undefined ? undefined : Number(status), head, body: end === -1 ? '' : text.slice(end + 4) };
}
