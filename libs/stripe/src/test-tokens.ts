/**
 * Stripe's test payment methods decide what a confirmation does, so tests choose the outcome by choosing the card.
 * Any other `pm_card_*` (pm_card_visa, pm_card_mastercard, …) succeeds. Ids that are not `pm_card_*` are unknown.
 */

export type PaymentOutcome = { kind: 'succeeds' } | { kind: 'declined'; declineCode: string; message: string } | { kind: 'requires_action' };

export const TEST_PAYMENT_METHODS: Readonly<Record<string, PaymentOutcome>> = {
  pm_card_chargeDeclined: { kind: 'declined', declineCode: 'generic_decline', message: 'Your card was declined.' },
  // attaches to a customer, then every charge is declined: how Stripe's test mode makes renewals fail
  pm_card_chargeCustomerFail: { kind: 'declined', declineCode: 'generic_decline', message: 'Your card was declined.' },
  pm_card_chargeDeclinedInsufficientFunds: { kind: 'declined', declineCode: 'insufficient_funds', message: 'Your card has insufficient funds.' },
  pm_card_authenticationRequired: { kind: 'requires_action' },
  pm_card_threeDSecure2Required: { kind: 'requires_action' },
};

export function isTestPaymentMethod(id: string): boolean {
  return /^pm_card_[A-Za-z0-9]+$/.test(id);
}

export function outcomeFor(paymentMethod: string): PaymentOutcome {
  return Object.hasOwn(TEST_PAYMENT_METHODS, paymentMethod) ? TEST_PAYMENT_METHODS[paymentMethod] : { kind: 'succeeds' };
}

/** The card behind a test payment method, as Stripe's test cards show it (brand and last four digits). */
export function testCardDetails(paymentMethod: string): { brand: string; last4: string } {
  const known: Record<string, { brand: string; last4: string }> = {
    pm_card_mastercard: { brand: 'mastercard', last4: '4444' },
    pm_card_amex: { brand: 'amex', last4: '8431' },
    pm_card_chargeDeclined: { brand: 'visa', last4: '0002' },
    pm_card_chargeCustomerFail: { brand: 'visa', last4: '0341' },
    pm_card_chargeDeclinedInsufficientFunds: { brand: 'visa', last4: '9995' },
    pm_card_authenticationRequired: { brand: 'visa', last4: '3184' },
    pm_card_threeDSecure2Required: { brand: 'visa', last4: '3220' },
  };
  return Object.hasOwn(known, paymentMethod) ? known[paymentMethod] : { brand: 'visa', last4: '4242' };
}
