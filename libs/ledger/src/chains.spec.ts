import { runChains } from './chains';

/** Events are [name, linked, outcome]; applied names are pushed to `state` and popped on rollback. */
function run(events: [string, boolean, string][]) {
  const state: string[] = [];
  const failed: string[] = [];
  const results = runChains<[string, boolean, string], string>({
    events,
    linked: (e) => e[1],
    apply: ([name, , outcome]) => {
      if (outcome === 'created') state.push(name);
      return outcome;
    },
    mark: () => state.length,
    rollback: (mark) => void state.splice(mark),
    commit: () => {},
    failed: ([name], result) => failed.push(`${name}:${result}`),
    failedCode: 'linked_event_failed',
    chainOpenCode: 'linked_event_chain_open',
  });
  return { results, state, failed };
}

describe('linked chains', () => {
  it('applies unlinked events independently', () => {
    expect(
      run([
        ['a', false, 'created'],
        ['b', false, 'exceeds_credits'],
        ['c', false, 'created'],
      ]),
    ).toEqual({
      results: ['created', 'exceeds_credits', 'created'],
      state: ['a', 'c'],
      failed: ['b:exceeds_credits'],
    });
  });

  it('rolls a chain back when one member fails; the others answer linked_event_failed', () => {
    expect(
      run([
        ['a', true, 'created'],
        ['b', true, 'exceeds_credits'],
        ['c', false, 'created'],
        ['d', false, 'created'],
      ]),
    ).toEqual({
      results: ['linked_event_failed', 'exceeds_credits', 'linked_event_failed', 'created'],
      state: ['d'],
      failed: ['b:exceeds_credits'],
    });
  });

  it('treats exists as success inside a chain', () => {
    expect(
      run([
        ['a', true, 'exists'],
        ['b', false, 'created'],
      ]).results,
    ).toEqual(['exists', 'created']);
  });

  it('fails a chain left open at the end of the request', () => {
    expect(
      run([
        ['a', false, 'created'],
        ['b', true, 'created'],
        ['c', true, 'created'],
      ]),
    ).toEqual({
      results: ['created', 'linked_event_failed', 'linked_event_chain_open'],
      state: ['a'],
      failed: [],
    });
  });
});
