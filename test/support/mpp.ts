/** A 402 as a merchant sends it: one WWW-Authenticate field per challenge the facilitator issued (what mppx reads). */
export function paymentRequiredResponse(wwwAuthenticate: string[]): Response {
  const headers = new Headers();
  for (const value of wwwAuthenticate) headers.append('WWW-Authenticate', value);
  return new Response(null, { status: 402, headers });
}
