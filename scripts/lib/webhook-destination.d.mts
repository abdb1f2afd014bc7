export declare const DESTINATION_NOT_ALLOWED = 'webhook_destination_not_allowed';
export declare function forbiddenAddress(address: string): string | undefined;
export declare function forbiddenName(hostname: string): string | undefined;
export declare function checkWebhookUrl(
  raw: string,
  allowPrivate: boolean,
): { ok: true; url: string } | { ok: false; code: 'webhook_url_invalid' | 'webhook_destination_not_allowed'; reason: string };
export declare function allowPrivateFromEnv(env?: Record<string, string | undefined>): boolean;
