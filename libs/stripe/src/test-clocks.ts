import type { ApiContext, Handler } from './api';
import type { TestClock } from './billing-types';
import { runClockUntil } from './billing-cycle';
import { invalidRequest, resourceMissing } from './errors';
import { automaticRequest } from './events';
import { newId } from './ids';
import { LIST_PARAMS, paginate } from './list';
import { onlyParams, readInteger, readString, required } from './params';
import { addIntervals } from './periods';

/**
 * Test clocks, as in Stripe's test mode: `POST /v1/test_helpers/test_clocks {frozen_time, name?}`, `GET …/:id`,
 * `GET …`, `POST …/:id/advance {frozen_time}`. Customers made with `test_clock` live at its frozen time; advancing it
 * runs, in time order, everything their subscriptions have due up to the new time (billing-cycle.ts).
 *
 * Stripe advances in the background (status `advancing`, then `ready` and `test_helpers.test_clock.ready`); the fake
 * finishes within the request and answers `ready`, so a client that polls until `ready` works unchanged. As at Stripe,
 * one advance may go at most two intervals of the clock's shortest subscription ahead (two years with none).
 */

/** Stripe deletes a test clock 7 days after it was made (its API reference's example: `deletes_after` = `created` + 604800). */
const LIFETIME_SECONDS = 7 * 86_400;

export const createTestClock: Handler = (context, request) => {
  const { params } = request;
  onlyParams(params, ['frozen_time', 'name']);
  const frozenTime = required(readInteger(params.frozen_time, 'frozen_time', { min: 0 }), 'frozen_time');
  const created = context.nowSeconds();
  const clock = context.store.testClocks.add({
    id: newId('clock'),
    object: 'test_helpers.test_clock',
    created,
    deletes_after: created + LIFETIME_SECONDS,
    frozen_time: frozenTime,
    livemode: false,
    name: readString(params.name, 'name') ?? null,
    status: 'ready',
    status_details: {},
  });
  context.events.emit('test_helpers.test_clock.created', clock, request.info);
  return clock;
};

export const retrieveTestClock: Handler = (context, request) => {
  onlyParams(request.params, []);
  return findTestClock(context, request.pathIds[0]);
};

export const listTestClocks: Handler = (context, request) => {
  onlyParams(request.params, LIST_PARAMS);
  return paginate(context.store.testClocks.all(), request.params, request.path);
};

export const advanceTestClock: Handler = (context, request) => {
  const { params } = request;
  onlyParams(params, ['frozen_time']);
  const clock = findTestClock(context, request.pathIds[0]);
  const target = required(readInteger(params.frozen_time, 'frozen_time', { min: 0 }), 'frozen_time');
  if (target <= clock.frozen_time) {
    throw invalidRequest(`The test clock can only move forward: frozen_time must be after its current frozen_time (${clock.frozen_time}).`, {
      param: 'frozen_time',
    });
  }
  const limit = advanceLimit(context, clock);
  if (target > limit) {
    throw invalidRequest(
      `Cannot advance the test clock to ${target}: one advance can go at most two intervals of its shortest subscription ahead (to ${limit}). Advance in steps.`,
      { param: 'frozen_time' },
    );
  }
  Object.assign(clock, { status: 'advancing', status_details: { advancing: { target_frozen_time: target } } });
  context.events.emit('test_helpers.test_clock.advancing', clock, request.info);
  const automatic = automaticRequest(request.info.apiVersion);
  runClockUntil(context, automatic, clock, target);
  Object.assign(clock, { status: 'ready', status_details: {} });
  context.events.emit('test_helpers.test_clock.ready', clock, automatic);
  return clock;
};

export function findTestClock(context: ApiContext, id: string, param?: string): TestClock {
  const clock = context.store.testClocks.get(id);
  if (!clock) throw resourceMissing('test_clock', id, param);
  return clock;
}

function advanceLimit(context: ApiContext, clock: TestClock): number {
  const live = context.store.subscriptions.all().filter((subscription) => subscription.test_clock === clock.id && !subscription.ended_at);
  const limits = live.map((subscription) => {
    const { interval, interval_count: count } = subscription.items.data[0].price.recurring!;
    return addIntervals(clock.frozen_time, interval, 2 * count);
  });
  return Math.min(addIntervals(clock.frozen_time, 'year', 2), ...limits);
}
