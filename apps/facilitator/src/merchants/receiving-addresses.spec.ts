import { receivingAddress } from './receiving-addresses';

describe('receivingAddress', () => {
  const checksummed = '0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc';

  it('accepts an address in any single case, or correctly checksummed, and returns it checksummed', () => {
    for (const address of [checksummed, checksummed.toLowerCase(), `0x${checksummed.slice(2).toUpperCase()}`]) {
      expect(receivingAddress('eip155:8453', address)).toEqual({ ok: true, value: { network: 'eip155:8453', address: checksummed } });
    }
  });

  it('refuses a mixed-case address whose checksum is wrong, naming the right one', () => {
    const typo = checksummed.replace('D1a55', 'd1a55');
    expect(receivingAddress('eip155:8453', typo)).toEqual({
      ok: false,
      problems: [{ name: 'address', reason: `has a wrong EIP-55 checksum (did you mean ${checksummed}?)` }],
    });
  });

  it.each([
    ['base', checksummed, 'network'],
    ['eip155:0', checksummed, 'network'],
    ['solana:mainnet', checksummed, 'network'],
    [undefined, checksummed, 'network'],
    ['eip155:1', '0x1234', 'address'],
    ['eip155:1', `${checksummed}00`, 'address'],
    ['eip155:1', 42, 'address'],
    ['eip155:1', '0x0000000000000000000000000000000000000000', 'address'],
  ])('refuses network %j with address %j, naming %s', (network, address, name) => {
    const checked = receivingAddress(network, address);
    expect(checked.ok).toBe(false);
    if (!checked.ok) expect(checked.problems.map((p) => p.name)).toEqual([name]);
  });
});
