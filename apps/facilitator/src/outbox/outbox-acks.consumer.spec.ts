import { UnrecoverableError } from 'bullmq';
import { MAX_ACKS_PER_MESSAGE } from '@mp/clients';
import { parseAck } from './outbox-acks.consumer';

describe('parseAck', () => {
  it('takes a batch of event ids', () => {
    expect(parseAck({ eventIds: ['1', '42', '999999999999999999'] })).toEqual({ eventIds: ['1', '42', '999999999999999999'] });
  });

  it.each([
    [null, 'eventIds must be an array of 1 to'],
    [{}, 'eventIds must be an array of 1 to'],
    [{ eventIds: [] }, 'eventIds must be an array of 1 to'],
    [{ eventIds: Array.from({ length: MAX_ACKS_PER_MESSAGE + 1 }, (_, i) => String(i + 1)) }, 'eventIds must be an array of 1 to'],
    [{ eventIds: ['1', 2] }, '2 is not an event id'],
    [{ eventIds: ['0'] }, '"0" is not an event id'],
    [{ eventIds: ['event-7'] }, '"event-7" is not an event id'],
    // beyond what a bigint holds: refused here rather than failing the UPDATE on every retry
    [{ eventIds: ['9999999999999999999'] }, '"9999999999999999999" is not an event id'],
  ])('refuses %j for good', (data, reason) => {
    expect(() => parseAck(data)).toThrow(UnrecoverableError);
    expect(() => parseAck(data)).toThrow(reason);
  });
});
