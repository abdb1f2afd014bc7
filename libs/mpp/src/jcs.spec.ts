import fc from 'fast-check';
import { Json } from 'ox';
import { canonicalize, JcsError } from './jcs';

describe('canonicalize (RFC 8785)', () => {
  it('RFC 8785 §3.2.2 example: numbers, literals, string escapes', () => {
    const input = JSON.parse(
      '{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],"string":"\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/","literals":[null,true,false]}',
    );
    expect(canonicalize(input)).toBe(
      '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
    );
  });

  it('RFC 8785 §3.2.3 example: sorts by UTF-16 code units', () => {
    const input = {
      '\u20ac': 'Euro Sign',
      '\r': 'Carriage Return',
      '\ufb33': 'Hebrew Letter Dalet With Dagesh',
      '1': 'One',
      '\ud83d\ude00': 'Emoji: Grinning Face',
      '\u0080': 'Control',
      '\u00f6': 'Latin Small Letter O With Diaeresis',
    };
    // Compare the text: Object.keys on a parsed object would list integer-like keys first.
    expect(canonicalize(input)).toBe(
      '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis","\u20ac":"Euro Sign","\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
    );
  });

  it('serialises numbers like ECMAScript (RFC 8785 Appendix B samples)', () => {
    const cases: [number, string][] = [
      [0, '0'],
      [-0, '0'],
      [1e21, '1e+21'],
      [1e-7, '1e-7'],
      [123456789012345680000, '123456789012345680000'],
      [Number.MAX_SAFE_INTEGER, '9007199254740991'],
      [5e-324, '5e-324'],
      [1.7976931348623157e308, '1.7976931348623157e+308'],
      [0.1, '0.1'],
    ];
    for (const [value, text] of cases) expect(canonicalize(value)).toBe(text);
  });

  it('drops undefined members, refuses what JSON cannot hold', () => {
    expect(canonicalize({ b: undefined, a: 1 })).toBe('{"a":1}');
    for (const bad of [Number.NaN, Infinity, 1n, () => 1, Symbol('x'), undefined, [undefined]]) expect(() => canonicalize(bad)).toThrow(JcsError);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => canonicalize(cyclic)).toThrow(/cyclic/);
    const shared = { x: 1 };
    expect(canonicalize({ a: shared, b: shared })).toBe('{"a":{"x":1},"b":{"x":1}}');
  });

  const json = fc.jsonValue() as fc.Arbitrary<unknown>;
  it('parse(canonical(x)) deep-equals x; canonical is idempotent; no whitespace outside strings', () => {
    fc.assert(
      fc.property(json, (value) => {
        const text = canonicalize(value);
        const back = JSON.parse(text) as unknown;
        // JSON has no -0 (RFC 8785 writes it as 0, at any depth), so compare with what JSON itself round-trips.
        expect(back).toEqual(JSON.parse(JSON.stringify(value)));
        expect(canonicalize(back)).toBe(text);
        expect(text).toBe(JSON.stringify(back) === text ? text : canonicalize(JSON.parse(JSON.stringify(value))));
      }),
    );
  });

  it('agrees with ox Json.canonicalize (what mppx uses) on random JSON', () => {
    fc.assert(
      fc.property(json, (value) => {
        expect(canonicalize(value)).toBe(Json.canonicalize(value));
      }),
    );
  });
});
