import fc from 'fast-check';
import { Base64 } from 'ox';
import { Base64UrlError, decodeBase64Url, decodeBase64UrlText, encodeBase64Url } from './base64url';

describe('base64url', () => {
  it('encodes without padding in the url alphabet', () => {
    expect(encodeBase64Url(new Uint8Array([0xfb, 0xff]))).toBe('-_8');
    expect(encodeBase64Url('a')).toBe('YQ');
  });

  it('accepts both alphabets, with or without padding (like ox/mppx)', () => {
    for (const form of ['-_8', '+/8', '-_8=', '+/8=']) expect([...decodeBase64Url(form)]).toEqual([0xfb, 0xff]);
    expect(decodeBase64UrlText('YQ==')).toBe('a');
  });

  it.each(['YQ=', 'Y', 'YQ==YQ', 'Y Q', 'YQ\n', 'YQ.', 'YQ===', '=='])('rejects %j', (input) => {
    expect(() => decodeBase64Url(input)).toThrow(Base64UrlError);
  });

  it('rejects invalid UTF-8 when text is expected', () => {
    expect(() => decodeBase64UrlText(encodeBase64Url(new Uint8Array([0xff])))).toThrow(Base64UrlError);
  });

  it('round-trips bytes and matches ox', () => {
    fc.assert(
      fc.property(fc.uint8Array(), (bytes) => {
        const encoded = encodeBase64Url(bytes);
        expect(encoded).toBe(Base64.fromBytes(bytes, { url: true, pad: false }));
        expect([...decodeBase64Url(encoded)]).toEqual([...bytes]);
        expect([...decodeBase64Url(Base64.fromBytes(bytes))]).toEqual([...bytes]);
      }),
    );
  });
});
