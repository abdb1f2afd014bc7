import { systemClock, type Clock } from '@mp/billing';

/** Where subscriptions read the time: systemClock in the app, a ManualClock in tests that walk through periods. */
export const BILLING_CLOCK = Symbol('BILLING_CLOCK');

export const billingClockProvider = { provide: BILLING_CLOCK, useValue: systemClock satisfies Clock };
