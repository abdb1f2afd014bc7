/** JSON over HTTP as the e2e specs send it, with a merchant's API key when given. */

export interface Answer {
  status: number;
  body: any;
  headers: Headers;
}

/** A JSON request; `key` goes in Authorization: Bearer unless `keyHeader` says X-API-Key. A string body is sent as is. */
export async function call(
  url: string,
  init: { method?: string; body?: unknown; key?: string; keyHeader?: 'authorization' | 'x-api-key' } = {},
): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  if (init.key !== undefined) headers[init.keyHeader ?? 'authorization'] = init.keyHeader === 'x-api-key' ? init.key : `Bearer ${init.key}`;
  const response = await fetch(url, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers,
    body: init.body === undefined ? undefined : typeof init.body === 'string' ? init.body : JSON.stringify(init.body),
  });
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // keep the text
  }
  return { status: response.status, body, headers: response.headers };
}
