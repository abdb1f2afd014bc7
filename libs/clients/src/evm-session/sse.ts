/** One server-sent event (WHATWG SSE): `event` defaults to "message"; multi-line `data` is joined with "\n". */
export interface SseEvent {
  event: string;
  data: string;
  id?: string;
}

/**
 * Reads SSE events from a response body as they arrive (CRLF, LF or CR line ends; comments and unknown fields
 * skipped; an event is dispatched at its blank line, and a trailing event without one is dropped, as browsers do).
 */
export async function* readSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder();
  let buffer = '';
  let event = '';
  let data: string[] = [];
  let id: string | undefined;
  let sawData = false;
  const reader = body.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      let newline: RegExpExecArray | null;
      const lineEnd = /\r\n|\r|\n/g;
      let consumed = 0;
      while ((newline = lineEnd.exec(buffer)) !== null) {
        // a lone CR at the very end may be the first half of CRLF: wait for more
        if (newline[0] === '\r' && newline.index === buffer.length - 1 && !done) break;
        const line = buffer.slice(consumed, newline.index);
        consumed = newline.index + newline[0].length;
        if (line === '') {
          if (sawData) yield { event: event || 'message', data: data.join('\n'), ...(id !== undefined && { id }) };
          event = '';
          data = [];
          sawData = false;
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon === -1 ? line : line.slice(0, colon);
        let value = colon === -1 ? '' : line.slice(colon + 1);
        if (value.startsWith(' ')) value = value.slice(1);
        if (field === 'event') event = value;
        else if (field === 'data') {
          data.push(value);
          sawData = true;
        } else if (field === 'id') id = value;
      }
      buffer = buffer.slice(consumed);
      if (done) return;
    }
  } finally {
    reader.releaseLock();
  }
}
