import { networkIdOf, v1NameMap, v1NamesOf } from './network-names';

const base = { network: 'eip155:8453', v1Names: [] };
const local = { network: 'eip155:31337', v1Names: ['anvil', 'local'] };
const wellKnown = { base: 'eip155:8453', sepolia: 'eip155:11155111', anvil: 'eip155:999' };

describe('v1NameMap', () => {
  it("maps each network's own v1 names, and the well-known names of configured networks only", () => {
    const names = v1NameMap([base, local], wellKnown);
    expect(Object.fromEntries(names)).toEqual({ anvil: 'eip155:31337', local: 'eip155:31337', base: 'eip155:8453' });
  });

  it('lets a configured network take a well-known name for itself', () => {
    const names = v1NameMap([base, { network: 'eip155:84532', v1Names: ['base'] }], wellKnown);
    expect(names.get('base')).toBe('eip155:84532');
  });

  it('uses the x402 well-known names by default', () => {
    expect(v1NameMap([base]).get('base')).toBe('eip155:8453');
  });
});

describe('networkIdOf', () => {
  const names = v1NameMap([base, local], wellKnown);

  it('takes a v2 network as a CAIP-2 id, never as a v1 name', () => {
    expect(networkIdOf('eip155:8453', 2, names)).toBe('eip155:8453');
    expect(networkIdOf('base', 2, names)).toBe('base');
  });

  it('resolves a v1 name, and accepts a CAIP-2 id in v1 too', () => {
    expect(networkIdOf('base', 1, names)).toBe('eip155:8453');
    expect(networkIdOf('local', 1, names)).toBe('eip155:31337');
    expect(networkIdOf('eip155:31337', 1, names)).toBe('eip155:31337');
  });

  it('knows no v1 name that no configured network answers to', () => {
    expect(networkIdOf('sepolia', 1, names)).toBeUndefined();
    expect(networkIdOf('Base', 1, names)).toBeUndefined();
  });
});

describe('v1NamesOf', () => {
  it('lists every v1 name of one network', () => {
    const names = v1NameMap([base, local], wellKnown);
    expect(v1NamesOf('eip155:31337', names).sort()).toEqual(['anvil', 'local']);
    expect(v1NamesOf('eip155:1', names)).toEqual([]);
  });
});
