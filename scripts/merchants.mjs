#!/usr/bin/env node
// Merchant accounts and API keys of the facilitator, through its operator API (/admin/merchants): a running
// facilitator with OPERATOR_TOKEN set, its URL in FACILITATOR_URL (default http://127.0.0.1:4020) and the same token
// in OPERATOR_TOKEN here. Nothing is written to PostgreSQL by this script.
//
//   node scripts/merchants.mjs create --name <name> [--webhook-url <url>] [--key-name <name>]
//        [--receiving-address <network>:<address>]... [--receiving-address-of-chain <manifest.json>]
//        [--allow-any-pay-to] [--key-file <path>]
//   node scripts/merchants.mjs keys create --merchant <merchantId> [--name <name>]
//   node scripts/merchants.mjs keys revoke --merchant <merchantId> <keyId>
//   node scripts/merchants.mjs set-webhook <merchantId> <url|none>
//   node scripts/merchants.mjs rotate-webhook-secret <merchantId>
//   node scripts/merchants.mjs deliveries <merchantId> [--status pending|delivered|failed]
//   node scripts/merchants.mjs resend <merchantId> <deliveryId>
//   node scripts/merchants.mjs disable|enable <merchantId>
//   node scripts/merchants.mjs rotate-mpp-secret <merchantId>
//   node scripts/merchants.mjs receiving-addresses add|remove <merchantId> <network>:<address>
//   node scripts/merchants.mjs receiving-addresses list <merchantId>
//   node scripts/merchants.mjs allow-any-pay-to <merchantId> on|off
//   node scripts/merchants.mjs list
//
// A keyed merchant's settlements may pay only the receiving addresses it declared (CAIP-10: a CAIP-2 network and an
// address, e.g. eip155:8453:0xAbC…), unless allow-any-pay-to is on. --key-file writes FACILITATOR_API_KEY=<key> to a
// new file (mode 600) for a merchant agent to read, instead of only printing it. --receiving-address-of-chain declares
// the merchant account of a local chain's manifest (scripts/chain.mjs), as docker/compose.yml does.
// Add --json for machine-readable output. API keys and webhook secrets are printed once, when they are made, and never
// again: the facilitator keeps only the key's sha256. The facilitator checks everything (webhook destinations against
// its WEBHOOK_ALLOW_PRIVATE, addresses, names) and its problem is printed as it comes.
// Exit codes: 0 done, 1 failed (not found, facilitator unreachable or refusing), 2 usage error or invalid input.
import { closeSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { URLSearchParams } from 'node:url';

const USAGE = `usage (FACILITATOR_URL, OPERATOR_TOKEN from the environment):
  node scripts/merchants.mjs create --name <name> [--webhook-url <url>] [--key-name <name>]
       [--receiving-address <network>:<address>]... [--receiving-address-of-chain <manifest.json>]
       [--allow-any-pay-to] [--key-file <path>] [--json]
  node scripts/merchants.mjs keys create --merchant <merchantId> [--name <name>] [--json]
  node scripts/merchants.mjs keys revoke --merchant <merchantId> <keyId> [--json]
  node scripts/merchants.mjs set-webhook <merchantId> <url|none> [--json]
  node scripts/merchants.mjs rotate-webhook-secret <merchantId> [--json]
  node scripts/merchants.mjs deliveries <merchantId> [--status pending|delivered|failed] [--json]
  node scripts/merchants.mjs resend <merchantId> <deliveryId> [--json]
  node scripts/merchants.mjs disable|enable <merchantId> [--json]
  node scripts/merchants.mjs rotate-mpp-secret <merchantId> [--json]
  node scripts/merchants.mjs receiving-addresses add|remove <merchantId> <network>:<address> [--json]
  node scripts/merchants.mjs receiving-addresses list <merchantId> [--json]
  node scripts/merchants.mjs allow-any-pay-to <merchantId> on|off [--json]
  node scripts/merchants.mjs list [--json]`;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

class UsageError extends Error {}
/** the facilitator refused the input (400): exit 2 like a usage error, without the usage text */
class Invalid extends Error {}
class Failure extends Error {}

function uuid(value, what) {
  if (typeof value !== 'string' || !UUID.test(value)) throw new UsageError(`${what} must be a UUID`);
  return value.toLowerCase();
}

/**
 * `<network>:<address>` (CAIP-10) split in two; the facilitator checks the rest (a non-zero address, a valid EIP-55
 * checksum when mixed-case) as it does for the merchant API.
 */
function receivingAddress(value) {
  const match = /^(eip155:[1-9][0-9]{0,19}):(0x[0-9a-fA-F]{40})$/.exec(value ?? '');
  if (!match) throw new UsageError(`a receiving address is <network>:<address>, e.g. eip155:8453:0x…; got ${JSON.stringify(value ?? '')}`);
  return { network: match[1], address: match[2] };
}

/** `<network>:<address>` of the merchant account in a local chain's manifest (written by scripts/chain.mjs). */
function chainMerchantAddress(manifestPath) {
  let manifest;
  try {
    manifest = JSON.parse(readFileSync(manifestPath, 'utf8'));
  } catch (error) {
    throw new Failure(`cannot read the chain manifest ${manifestPath}: ${error.message}`);
  }
  if (typeof manifest?.network !== 'string' || typeof manifest?.accounts?.merchant?.address !== 'string') {
    throw new Failure(`${manifestPath} names no network and merchant account`);
  }
  return `${manifest.network}:${manifest.accounts.merchant.address}`;
}

/**
 * A new file only its owner reads, opened before the merchant is made, so that a path that cannot be written (or an
 * existing file: a key made earlier, left alone) stops before anything is created. Removed again if creation fails.
 */
function openKeyFile(path) {
  try {
    return openSync(path, 'wx', 0o600);
  } catch (error) {
    throw new Failure(error.code === 'EEXIST' ? `${path} exists already (a key made earlier): nothing was created` : `cannot write ${path}: ${error.message}`);
  }
}

/** The facilitator's operator API: its answer, or a Failure/UsageError carrying its problem. */
function operatorApi() {
  const base = (process.env.FACILITATOR_URL || 'http://127.0.0.1:4020').replace(/\/+$/, '');
  const token = process.env.OPERATOR_TOKEN;
  if (!token) throw new UsageError("set OPERATOR_TOKEN to the facilitator's operator token");
  return async function request(method, path, body) {
    let response;
    try {
      response = await fetch(`${base}/admin/merchants${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(30_000),
      });
    } catch (error) {
      throw new Failure(`cannot reach the facilitator at ${base}: ${error.cause?.code ?? error.message}`);
    }
    const text = await response.text();
    const answer = text ? safeJson(text) : undefined;
    if (response.ok) return { status: response.status, body: answer };
    if (response.status === 401) throw new Failure(`the facilitator at ${base} refused OPERATOR_TOKEN`);
    const fields = (answer?.invalidParams ?? []).map((p) => `\n  ${p.name}: ${p.reason}`).join('');
    const message = `${answer?.code ?? response.status}: ${answer?.detail ?? answer?.title ?? text}${fields}`;
    throw response.status === 400 ? new Invalid(message) : new Failure(message);
  };
}

function safeJson(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Every merchant, following the pages. */
async function allMerchants(api) {
  const merchants = [];
  let cursor = null;
  do {
    const page = (await api('GET', `?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)).body;
    merchants.push(...page.data);
    cursor = page.nextCursor;
  } while (cursor);
  return merchants;
}

const caip10 = (a) => `${a.network}:${a.address}`;
const onOff = (allow) => (allow ? 'on' : 'off');

const commands = {
  async create(api, { values }) {
    const receivingAddresses = (values['receiving-address'] ?? []).map(receivingAddress);
    if (values['receiving-address-of-chain'] !== undefined)
      receivingAddresses.push(receivingAddress(chainMerchantAddress(values['receiving-address-of-chain'])));
    const keyFile = values['key-file'] === undefined ? undefined : openKeyFile(values['key-file']);
    let created;
    try {
      created = (
        await api('POST', '', {
          name: values.name,
          ...(values['webhook-url'] !== undefined && { webhookUrl: values['webhook-url'] }),
          ...(values['key-name'] !== undefined && { keyName: values['key-name'] }),
          receivingAddresses,
          allowAnyPayTo: values['allow-any-pay-to'],
        })
      ).body;
    } catch (error) {
      if (keyFile !== undefined) {
        closeSync(keyFile);
        rmSync(values['key-file'], { force: true });
      }
      throw error;
    }
    const { merchant, apiKey, webhookSecret } = created;
    if (keyFile !== undefined) {
      writeSync(keyFile, `FACILITATOR_API_KEY=${apiKey.apiKey}\n`);
      closeSync(keyFile);
    }
    const declared = merchant.receivingAddresses.map(caip10);
    return {
      result: {
        merchantId: merchant.merchantId,
        name: merchant.name,
        webhookUrl: merchant.webhookUrl,
        keyId: apiKey.keyId,
        apiKey: apiKey.apiKey,
        webhookSecret,
        receivingAddresses: declared,
        allowAnyPayTo: merchant.allowAnyPayTo,
      },
      lines: [
        `merchant        ${merchant.merchantId}  ${merchant.name}`,
        `webhook url     ${merchant.webhookUrl ?? '(none)'}`,
        `receiving       ${merchant.allowAnyPayTo ? 'any address (allow-any-pay-to)' : declared.join(', ') || '(none declared: every settlement is refused until one is)'}`,
        `api key id      ${apiKey.keyId}`,
        `api key         ${apiKey.apiKey}${values['key-file'] !== undefined ? `  (written to ${values['key-file']})` : ''}`,
        `webhook secret  ${webhookSecret}`,
        '',
        'The API key and the webhook secret are shown this once; store them now.',
      ],
    };
  },

  async 'keys create'(api, { values }) {
    const merchantId = uuid(values.merchant, '--merchant');
    const key = (await api('POST', `/${merchantId}/api-keys`, values.name === undefined ? {} : { name: values.name })).body;
    return {
      result: { merchantId, keyId: key.keyId, apiKey: key.apiKey },
      lines: [`api key id  ${key.keyId}`, `api key     ${key.apiKey}`, '', 'The API key is shown this once; store it now.'],
    };
  },

  async 'keys revoke'(api, { values, positionals }) {
    const merchantId = uuid(values.merchant, '--merchant');
    const keyId = uuid(positionals[0], 'the key id');
    const key = (await api('POST', `/${merchantId}/api-keys/${keyId}/revoke`)).body;
    return { result: { merchantId, keyId, revokedAt: key.revokedAt }, lines: [`revoked API key ${keyId}`] };
  },

  async 'set-webhook'(api, { positionals }) {
    const merchantId = uuid(positionals[0], 'the merchant id');
    if (positionals[1] === undefined) throw new UsageError('give the webhook URL, or none');
    const { webhookUrl } = (await api('PUT', `/${merchantId}/webhook`, { webhookUrl: positionals[1] === 'none' ? null : positionals[1] })).body;
    return { result: { merchantId, webhookUrl }, lines: [`merchant ${merchantId}: webhook url ${webhookUrl ?? '(none)'}`] };
  },

  async 'rotate-webhook-secret'(api, { positionals }) {
    const merchantId = uuid(positionals[0], 'the merchant id');
    const { webhookSecret } = (await api('POST', `/${merchantId}/webhook/rotate-secret`)).body;
    return {
      result: { merchantId, webhookSecret },
      lines: [`webhook secret  ${webhookSecret}`, '', 'Every attempt from now on is signed with this secret only; it is shown this once.'],
    };
  },

  async deliveries(api, { values, positionals }) {
    const merchantId = uuid(positionals[0], 'the merchant id');
    const query = new URLSearchParams({ limit: '100', ...(values.status !== undefined && { status: values.status }) });
    const page = (await api('GET', `/${merchantId}/webhook-deliveries?${query}`)).body;
    const lines = page.data.length ? [] : ['no webhook deliveries'];
    for (const d of page.data) {
      lines.push(
        `${d.deliveryId}  ${d.eventType}  ${d.status}  attempt ${d.attempt}${d.responseStatus === null ? '' : `  HTTP ${d.responseStatus}`}${d.error ? `  ${d.error}` : ''}  ${d.createdAt}`,
      );
    }
    if (page.nextCursor) lines.push('(the 100 most recent; GET /admin/merchants/{id}/webhook-deliveries pages through the rest)');
    return { result: page.data, lines };
  },

  async resend(api, { positionals }) {
    const merchantId = uuid(positionals[0], 'the merchant id');
    const deliveryId = uuid(positionals[1], 'the delivery id');
    const delivery = (await api('POST', `/${merchantId}/webhook-deliveries/${deliveryId}/resend`)).body;
    return { result: delivery, lines: [`delivery ${deliveryId} queued again to ${delivery.url}`] };
  },

  // The facilitator accepts the previous secret for an hour (the longest a challenge lives), then only the new one;
  // replicas pick the new one up within API_KEY_CACHE_MS.
  async 'rotate-mpp-secret'(api, { positionals }) {
    const merchantId = uuid(positionals[0], 'the merchant id');
    const rotated = (await api('POST', `/${merchantId}/mpp-secret/rotate`)).body;
    return { result: rotated, lines: [`merchant ${merchantId}: MPP challenge secret rotated; the previous one is accepted for one more hour`] };
  },

  async 'receiving-addresses add'(api, { positionals }) {
    const merchantId = uuid(positionals[0], 'the merchant id');
    const declared = (await api('POST', `/${merchantId}/receiving-addresses`, receivingAddress(positionals[1]))).body;
    return { result: { merchantId, network: declared.network, address: declared.address }, lines: [`merchant ${merchantId}: receives at ${caip10(declared)}`] };
  },

  async 'receiving-addresses remove'(api, { positionals }) {
    const merchantId = uuid(positionals[0], 'the merchant id');
    const { network, address } = receivingAddress(positionals[1]);
    // read first, to report the address as the facilitator spells it (EIP-55)
    const declared = (await api('GET', `/${merchantId}`)).body.receivingAddresses.find(
      (a) => a.network === network && a.address.toLowerCase() === address.toLowerCase(),
    );
    await api('DELETE', `/${merchantId}/receiving-addresses/${network}/${address}`);
    const removed = declared?.address ?? address;
    return { result: { merchantId, network, address: removed, removed: true }, lines: [`merchant ${merchantId}: no longer receives at ${network}:${removed}`] };
  },

  async 'receiving-addresses list'(api, { positionals }) {
    const merchantId = uuid(positionals[0], 'the merchant id');
    const merchant = (await api('GET', `/${merchantId}`)).body;
    const addresses = merchant.receivingAddresses.map(caip10);
    return {
      result: { merchantId, allowAnyPayTo: merchant.allowAnyPayTo, receivingAddresses: addresses },
      lines: [`allow any payTo  ${onOff(merchant.allowAnyPayTo)}`, ...(addresses.length ? addresses : ['(no receiving addresses)'])],
    };
  },

  async 'allow-any-pay-to'(api, { positionals }) {
    const merchantId = uuid(positionals[0], 'the merchant id');
    if (positionals[1] !== 'on' && positionals[1] !== 'off') throw new UsageError('allow-any-pay-to takes on or off');
    const { allowAnyPayTo } = (await api('PATCH', `/${merchantId}`, { allowAnyPayTo: positionals[1] === 'on' })).body;
    return {
      result: { merchantId, allowAnyPayTo },
      lines: [`merchant ${merchantId}: ${allowAnyPayTo ? 'settlements may pay any address' : 'settlements may pay only its receiving addresses'}`],
    };
  },

  async disable(api, { positionals }) {
    const merchantId = uuid(positionals[0], 'the merchant id');
    const { disabledAt } = (await api('POST', `/${merchantId}/disable`)).body;
    return { result: { merchantId, disabledAt }, lines: [`disabled merchant ${merchantId}: its keys no longer work and no more webhooks are sent`] };
  },

  async enable(api, { positionals }) {
    const merchantId = uuid(positionals[0], 'the merchant id');
    await api('POST', `/${merchantId}/enable`);
    return { result: { merchantId, disabledAt: null }, lines: [`enabled merchant ${merchantId}: its unrevoked keys work again`] };
  },

  async list(api) {
    const result = (await allMerchants(api)).map((m) => ({
      merchantId: m.merchantId,
      name: m.name,
      webhookUrl: m.webhookUrl,
      allowAnyPayTo: m.allowAnyPayTo,
      receivingAddresses: m.receivingAddresses.map(caip10),
      createdAt: m.createdAt,
      disabledAt: m.disabledAt,
      keys: m.apiKeys.map((k) => ({
        keyId: k.keyId,
        key: `mpk_${k.prefix}_…`,
        name: k.name,
        createdAt: k.createdAt,
        lastUsedAt: k.lastUsedAt,
        revokedAt: k.revokedAt,
      })),
    }));
    const lines = result.length ? [] : ['no merchants'];
    for (const m of result) {
      lines.push(`${m.merchantId}  ${m.name}${m.disabledAt ? `  DISABLED ${m.disabledAt}` : ''}`, `  webhook url  ${m.webhookUrl ?? '(none)'}`);
      lines.push(`  receiving    ${m.allowAnyPayTo ? 'any address' : m.receivingAddresses.join(', ') || '(none)'}`);
      for (const k of m.keys) {
        lines.push(
          `  key ${k.keyId}  ${k.key}  ${k.name ?? ''}  created ${k.createdAt}  last used ${k.lastUsedAt ?? '-'}${k.revokedAt ? `  REVOKED ${k.revokedAt}` : ''}`,
        );
      }
    }
    return { result, lines };
  },
};

async function main(argv) {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        name: { type: 'string' },
        'webhook-url': { type: 'string' },
        'key-name': { type: 'string' },
        merchant: { type: 'string' },
        'receiving-address': { type: 'string', multiple: true },
        'allow-any-pay-to': { type: 'boolean', default: false },
        'key-file': { type: 'string' },
        status: { type: 'string' },
        'receiving-address-of-chain': { type: 'string' },
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (error) {
    throw new UsageError(error.message);
  }
  if (parsed.values.help) {
    console.log(USAGE);
    return;
  }
  const [first, second, ...rest] = parsed.positionals;
  const grouped = first === 'keys' || first === 'receiving-addresses';
  const name = grouped ? `${first} ${second ?? ''}` : first;
  const command = commands[name];
  if (!command) throw new UsageError(first ? `unknown command: ${name}` : 'no command given');
  const positionals = grouped ? rest : [second, ...rest].filter((p) => p !== undefined);

  const { result, lines } = await command(operatorApi(), { values: parsed.values, positionals });
  console.log(parsed.values.json ? JSON.stringify(result, null, 2) : lines.join('\n'));
}

try {
  await main(process.argv.slice(2));
} catch (error) {
  if (error instanceof UsageError) {
    console.error(`merchants: ${error.message}\n${USAGE}`);
    process.exit(2);
  }
  console.error(`merchants: ${error.message}`);
  if (error instanceof Invalid) process.exit(2);
  process.exit(1);
}
