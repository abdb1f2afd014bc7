import { ConfigError } from '@mp/platform';
import { loadReconciliationConfig, parseRpcUrls } from './reconciliation.config';

describe('reconciliation config', () => {
  it('has local defaults: queue prefix per database, a daily schedule, 2,000-block ranges, no Stripe', () => {
    const config = loadReconciliationConfig({ DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/books', CHAIN_MANIFEST: '/nonexistent.json' });
    expect(config).toMatchObject({
      queuePrefix: 'mp:books',
      schedule: '15 0 * * *',
      schedulePeriod: 'day',
      blockRange: 2000,
      pendingWindowMs: 600_000,
      worker: true,
      networks: [],
    });
    expect(config.stripe).toBeUndefined();
    expect(config.reportLinkSecret).toHaveLength(32);
  });

  it('reads RPC URLs per network, several per network in order', () => {
    expect(parseRpcUrls('eip155:8453=https://a.example|https://b.example; eip155:84532=https://c.example')).toEqual([
      { network: 'eip155:8453', chainId: 8453, rpcUrls: ['https://a.example', 'https://b.example'] },
      { network: 'eip155:84532', chainId: 84532, rpcUrls: ['https://c.example'] },
    ]);
  });

  it.each([
    ['eip155:8453', 'not eip155:<chainId>=<url>'],
    ['solana:1=https://x', 'not eip155:<chainId>=<url>'],
    ['eip155:1=ftp://x', 'not eip155:<chainId>=<url>'],
    ['eip155:1=https://a;eip155:1=https://b', 'listed twice'],
  ])('refuses RECON_CHAIN_RPC_URLS=%s', (value, message) => {
    expect(() => loadReconciliationConfig({ RECON_CHAIN_RPC_URLS: value })).toThrow(message);
  });

  it('reads the batch-settlement contracts per network (RECON_BATCH_SETTLEMENT_CONTRACTS), none without them or a manifest', () => {
    const config = loadReconciliationConfig({
      CHAIN_MANIFEST: '/nonexistent.json',
      RECON_BATCH_SETTLEMENT_CONTRACTS: 'eip155:8453=0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003; eip155:84532=0x00000000000000000000000000000000000000aa',
    });
    expect(config.batchSettlementContracts).toEqual([
      { network: 'eip155:8453', escrow: '0x4020074e9df2ce1dee5a9c1b5c3f541d02a10003' },
      { network: 'eip155:84532', escrow: '0x00000000000000000000000000000000000000aa' },
    ]);
    expect(loadReconciliationConfig({ CHAIN_MANIFEST: '/nonexistent.json' }).batchSettlementContracts).toEqual([]);
    expect(() => loadReconciliationConfig({ RECON_BATCH_SETTLEMENT_CONTRACTS: 'eip155:8453=0x12' })).toThrow(
      /RECON_BATCH_SETTLEMENT_CONTRACTS: "eip155:8453=0x12" is not eip155:<chainId>=<0x address>/,
    );
  });

  it('reads an explorer base URL per reconciled network (RECON_EXPLORER_URLS)', () => {
    const config = loadReconciliationConfig({
      RECON_CHAIN_RPC_URLS: 'eip155:8453=https://rpc.example;eip155:84532=https://rpc2.example',
      RECON_EXPLORER_URLS: 'eip155:8453=https://basescan.org/ ',
    });
    expect(config.networks).toEqual([
      { network: 'eip155:8453', chainId: 8453, rpcUrls: ['https://rpc.example'], explorerUrl: 'https://basescan.org' },
      { network: 'eip155:84532', chainId: 84532, rpcUrls: ['https://rpc2.example'] },
    ]);
  });

  it.each([
    ['eip155:8453', 'not eip155:<chainId>=<http(s) URL>'],
    ['eip155:8453=javascript:alert(1)', 'not eip155:<chainId>=<http(s) URL>'],
    ['eip155:8453=https://a"b', 'not eip155:<chainId>=<http(s) URL>'],
    ['eip155:8453=https://a;eip155:8453=https://b', 'listed twice'],
    ['eip155:1=https://etherscan.io', 'eip155:1 is not a reconciled network'],
  ])('refuses RECON_EXPLORER_URLS=%s', (value, message) => {
    expect(() => loadReconciliationConfig({ RECON_CHAIN_RPC_URLS: 'eip155:8453=https://rpc.example', RECON_EXPLORER_URLS: value })).toThrow(message);
  });

  it('turns the schedule off, and names the variable of a bad value', () => {
    expect(loadReconciliationConfig({ RECON_SCHEDULE: 'off', CHAIN_MANIFEST: '/nonexistent.json' }).schedule).toBeUndefined();
    for (const [name, value] of [
      ['RECON_SCHEDULE', 'daily'],
      ['RECON_BLOCK_RANGE', '0'],
      ['STRIPE_SECRET_KEY', 'pk_test_x'],
      ['RECON_REPORT_LINK_SECRET', 'short'],
    ]) {
      const error = (() => {
        try {
          loadReconciliationConfig({ [name]: value });
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).message).toContain(name);
    }
  });

  it('requires RECON_REPORT_LINK_SECRET in production, naming it; elsewhere a random one per process', () => {
    const error = (() => {
      try {
        loadReconciliationConfig({ NODE_ENV: 'production', CHAIN_MANIFEST: '/nonexistent.json' });
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toContain('RECON_REPORT_LINK_SECRET: is required when NODE_ENV=production');
    const secret = 's'.repeat(32);
    expect(
      loadReconciliationConfig({ NODE_ENV: 'production', RECON_REPORT_LINK_SECRET: secret, CHAIN_MANIFEST: '/nonexistent.json' }).reportLinkSecret.toString(),
    ).toBe(secret);
    const [a, b] = [
      loadReconciliationConfig({ CHAIN_MANIFEST: '/nonexistent.json' }),
      loadReconciliationConfig({ NODE_ENV: 'development', CHAIN_MANIFEST: '/nonexistent.json' }),
    ];
    expect(a.reportLinkSecret.equals(b.reportLinkSecret)).toBe(false);
  });

  it("reads Stripe with a restricted key and the fake's URL", () => {
    const config = loadReconciliationConfig({
      STRIPE_SECRET_KEY: 'rk_live_abc',
      STRIPE_API_BASE: 'http://127.0.0.1:12111',
      CHAIN_MANIFEST: '/nonexistent.json',
    });
    expect(config.stripe).toMatchObject({ secretKey: 'rk_live_abc', timeoutMs: 20_000 });
    expect(config.stripe?.apiBase.port).toBe('12111');
  });
});
