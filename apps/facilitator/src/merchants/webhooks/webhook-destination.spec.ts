import { checkedLookup, checkWebhookUrl, forbiddenAddress, forbiddenName, refuseForbiddenLiteral, WebhookDestinationRefused } from './webhook-destination';

const FORBIDDEN: [address: string, kind: string][] = [
  ['127.0.0.1', 'a loopback address'],
  ['127.255.0.9', 'a loopback address'],
  ['10.1.2.3', 'a private address'],
  ['172.16.0.1', 'a private address'],
  ['172.31.255.255', 'a private address'],
  ['192.168.1.1', 'a private address'],
  ['100.64.0.1', 'a shared (carrier-grade NAT) address'],
  ['100.127.255.254', 'a shared (carrier-grade NAT) address'],
  ['169.254.10.10', 'a link-local address'],
  ['169.254.169.254', 'a cloud metadata address'],
  ['168.63.129.16', 'a cloud metadata address'],
  ['100.100.100.200', 'a cloud metadata address'],
  ['0.0.0.0', 'an unspecified address'],
  ['224.0.0.1', 'a multicast address'],
  ['255.255.255.255', 'a reserved address'],
  ['::', 'an unspecified address'],
  ['::1', 'a loopback address'],
  ['[::1]', 'a loopback address'],
  ['fc00::1', 'a private (unique local) address'],
  ['fd12:3456::1', 'a private (unique local) address'],
  ['fd00:ec2::254', 'a cloud metadata address'],
  ['fe80::1%eth0', 'a link-local address'],
  ['febf::1', 'a link-local address'],
  ['ff02::1', 'a multicast address'],
  // IPv4 inside IPv6 counts as the IPv4 address
  ['::ffff:127.0.0.1', 'a loopback address'],
  ['::ffff:7f00:1', 'a loopback address'],
  ['::ffff:169.254.169.254', 'a cloud metadata address'],
  ['::ffff:10.0.0.1', 'a private address'],
  ['64:ff9b::a9fe:a9fe', 'a cloud metadata address'],
  ['2002:c0a8:0101::1', 'a private address'],
];
const PUBLIC = [
  '8.8.8.8',
  '1.1.1.1',
  '172.32.0.1',
  '100.128.0.1',
  '169.253.255.255',
  '11.0.0.1',
  '2606:4700:4700::1111',
  '2001:4860::8888',
  '::ffff:8.8.8.8',
  'fbff::1',
  'fe00::1',
];

describe('webhook destinations', () => {
  it.each(FORBIDDEN)('refuses %s (%s)', (address, kind) => {
    expect(forbiddenAddress(address)).toBe(kind);
  });

  it.each(PUBLIC)('allows the public address %s', (address) => {
    expect(forbiddenAddress(address)).toBeUndefined();
  });

  it('refuses loopback and metadata names', () => {
    for (const name of ['localhost', 'LOCALHOST.', 'api.localhost', 'metadata.google.internal', 'metadata.goog', 'instance-data']) {
      expect(forbiddenName(name)).toBeDefined();
    }
    expect(forbiddenName('hooks.example.com')).toBeUndefined();
  });

  it('checks a URL at registration with a reason code, and WEBHOOK_ALLOW_PRIVATE lets private ones through', () => {
    const cases: [string, string | undefined][] = [
      ['https://hooks.example.com/x?token=1', undefined],
      ['http://127.0.0.1:8080/hooks', 'webhook_destination_not_allowed'],
      ['http://2130706433/hooks', 'webhook_destination_not_allowed'], // 127.0.0.1 spelled as a number
      ['http://0x7f.1/hooks', 'webhook_destination_not_allowed'],
      ['http://[::ffff:127.0.0.1]/hooks', 'webhook_destination_not_allowed'],
      ['http://[fd00:ec2::254]/latest/meta-data', 'webhook_destination_not_allowed'],
      ['http://metadata.google.internal/computeMetadata/v1/', 'webhook_destination_not_allowed'],
      ['http://localhost:3000/', 'webhook_destination_not_allowed'],
      ['ftp://hooks.example.com/', 'webhook_url_invalid'],
      ['not a url', 'webhook_url_invalid'],
    ];
    for (const [url, code] of cases) {
      const ours = checkWebhookUrl(url, false);
      expect(ours.ok ? undefined : ours.code).toBe(code);
      if (code === 'webhook_destination_not_allowed') expect(checkWebhookUrl(url, true)).toMatchObject({ ok: true });
    }
    expect(checkWebhookUrl('http://169.254.169.254/', false)).toMatchObject({
      ok: false,
      reason: expect.stringContaining('169.254.169.254 is a cloud metadata address'),
    });
  });

  it('at send time refuses a name that resolves to a forbidden address, and an IP literal', async () => {
    const lookup = (options: { all?: boolean }) =>
      new Promise<unknown>((resolve, reject) =>
        checkedLookup('localhost', { family: 4, ...options }, (error, address) => (error ? reject(error) : resolve(address))),
      );
    await expect(lookup({})).rejects.toThrow(WebhookDestinationRefused);
    await expect(lookup({ all: true })).rejects.toThrow(/^webhook_destination_not_allowed: localhost resolves to 127\.0\.0\.1, a loopback address$/);
    expect(() => refuseForbiddenLiteral(new URL('http://[::1]:9/'))).toThrow(/::1 is a loopback address/);
    expect(() => refuseForbiddenLiteral(new URL('http://8.8.8.8/'))).not.toThrow();
  });
});
