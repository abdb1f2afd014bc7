import type { PaymentOutcome } from './test-tokens';

/**
 * A test hook: the next charges to a customer or a payment method are declined, whatever card pays. Tests use it to
 * make a renewal fail (`invoice.payment_failed`, `past_due`) without swapping the subscription's payment method.
 * (Stripe's own test-mode way, attaching `pm_card_chargeCustomerFail` as the default payment method, works too.)
 */

export const DECLINE_MESSAGES = {
  generic_decline: 'Your card was declined.',
  insufficient_funds: 'Your card has insufficient funds.',
  lost_card: 'Your card was declined.',
  expired_card: 'Your card has expired.',
} as const;

export type DeclineCode = keyof typeof DECLINE_MESSAGES;

export interface DeclineOptions {
  /** how many charges to decline; default every charge until `clear` */
  times?: number;
  /** default `generic_decline` */
  declineCode?: DeclineCode;
}

interface Armed {
  remaining: number;
  declineCode: DeclineCode;
}

export class ChargeDeclines {
  private readonly armed = new Map<string, Armed>();

  /** `target`: a customer (`cus_…`) or payment method (`pm_…`, a `pm_card_*` test id included) id. */
  decline(target: string, { times = Number.POSITIVE_INFINITY, declineCode = 'generic_decline' }: DeclineOptions = {}): void {
    if (times <= 0) return void this.armed.delete(target);
    this.armed.set(target, { remaining: times, declineCode });
  }

  clear(target: string): void {
    this.armed.delete(target);
  }

  /** The decline armed for this charge, if any, without using it up (to check before anything is stored). */
  peek(paymentMethod: string, customer: string | null): PaymentOutcome | undefined {
    const armed = this.find(paymentMethod, customer);
    return armed && declined(armed[1].declineCode);
  }

  /** The decline armed for this charge, if any, used up. */
  take(paymentMethod: string, customer: string | null): PaymentOutcome | undefined {
    const armed = this.find(paymentMethod, customer);
    if (!armed) return undefined;
    const [target, entry] = armed;
    if (--entry.remaining <= 0) this.armed.delete(target);
    return declined(entry.declineCode);
  }

  private find(paymentMethod: string, customer: string | null): [string, Armed] | undefined {
    for (const target of [paymentMethod, customer]) {
      const entry = target === null ? undefined : this.armed.get(target);
      if (target !== null && entry) return [target, entry];
    }
    return undefined;
  }
}

function declined(declineCode: DeclineCode): PaymentOutcome {
  return { kind: 'declined', declineCode, message: DECLINE_MESSAGES[declineCode] };
}
