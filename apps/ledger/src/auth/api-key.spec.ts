import { presentedApiKey } from './api-key';

describe('presentedApiKey', () => {
  const key = 'mpk_abcdefgh_abcdefghijklmnopqrstuvwxyz234567';

  it('reads a bearer token first, then X-API-Key', () => {
    expect(presentedApiKey({ authorization: `Bearer ${key}` })).toBe(key);
    expect(presentedApiKey({ authorization: `bearer  ${key} ` })).toBe(key);
    expect(presentedApiKey({ 'x-api-key': ` ${key} ` })).toBe(key);
    expect(presentedApiKey({ authorization: `Bearer ${key}`, 'x-api-key': 'other' })).toBe(key);
  });

  it('passes nothing on that no key could be', () => {
    expect(presentedApiKey({})).toBeUndefined();
    expect(presentedApiKey({ authorization: 'Basic dXNlcjpwYXNz' })).toBeUndefined();
    expect(presentedApiKey({ 'x-api-key': 'two words' })).toBeUndefined();
    expect(presentedApiKey({ 'x-api-key': 'k'.repeat(257) })).toBeUndefined();
  });
});
