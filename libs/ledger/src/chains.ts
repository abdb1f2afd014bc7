import { isSuccess } from './results';

export interface ChainRun<E, R extends string> {
  events: readonly E[];
  linked(event: E): boolean;
  /** applies one event to the working state, returning its result; a failure must leave the state unchanged */
  apply(event: E, index: number): R;
  /** restore point before a chain; `rollback` returns the state to it */
  mark(): number;
  rollback(mark: number): void;
  /** a chain succeeded: its changes are final */
  commit(): void;
  /** the event that broke its chain (or failed alone), called once its chain is rolled back */
  failed?(event: E, result: R): void;
  failedCode: R;
  chainOpenCode: R;
}

/**
 * TigerBeetle's linked chains: an event with the `linked` flag succeeds or fails together with the next one, up to
 * the first event without it. When an event of a chain fails, everything the chain did is undone, that event keeps
 * its own result and every other member answers `linked_event_failed`. A chain still open at the end of the
 * request fails: its last event answers `linked_event_chain_open`. Unlike TigerBeetle, `exists` does not break a
 * chain, so a chain sent again answers `exists` for every member.
 */
export function runChains<E, R extends string>(run: ChainRun<E, R>): R[] {
  const { events } = run;
  const results = new Array<R>(events.length);
  let start = 0;
  while (start < events.length) {
    let end = start;
    while (end < events.length && run.linked(events[end])) end++;
    if (end === events.length) {
      for (let k = start; k < events.length; k++) results[k] = k === events.length - 1 ? run.chainOpenCode : run.failedCode;
      break;
    }
    const mark = run.mark();
    let failedAt = -1;
    for (let k = start; k <= end && failedAt < 0; k++) {
      results[k] = run.apply(events[k], k);
      if (!isSuccess(results[k])) failedAt = k;
    }
    if (failedAt < 0) run.commit();
    else {
      run.rollback(mark);
      for (let k = start; k <= end; k++) if (k !== failedAt) results[k] = run.failedCode;
      run.failed?.(events[failedAt], results[failedAt]);
    }
    start = end + 1;
  }
  return results;
}
