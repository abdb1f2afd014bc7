/**
 * Stripe's test payment methods decide what a confirmation does, so tests choose the outcome by choosing the card.
 * Any other `pm_card_*` (pm_card_visa, pm_card_mastercard, …) succeeds. Ids that are not `pm_card_*` are unknown.
 */

export type PaymentOutcome = { kind: 'succeeds' } | { kind: 'declined'; declineCode: string; message: string } | { kind: 'requires_action' };

export const TEST_PAYMENT_METHODS: Readonly<Record<string, PaymentOutcome>> = {
  pm_card_chargeDeclined: { kind: 'declined', declineCode: 'generic_decline', message: 'Your card was declined.' },
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
