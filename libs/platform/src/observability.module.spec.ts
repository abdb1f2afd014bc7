import { acceptRequestId } from './observability.module';

describe('acceptRequestId', () => {
  it('keeps one token of at most 128 safe characters', () => {
    for (const id of ['abc', '5b0e8d0c-3f1a-4c1e-9a43-0c1d2e3f4a5b', 'client:retry.2', 'a/b+c=d@e_f', 'x'.repeat(128)]) expect(acceptRequestId(id)).toBe(id);
  });

  it('refuses anything else', () => {
    for (const id of [undefined, '', 'two words', 'x'.repeat(129), 'line\nbreak', '-leading-dash', 'quote"', '<script>', ['a', 'b'], 42]) {
      expect(acceptRequestId(id)).toBeUndefined();
    }
  });
});
