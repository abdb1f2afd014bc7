-- Reconciliation of refunds (issue 13 item 7): a payment whose booked refunds exceed what it captured is a break of
-- its own kind, over_refund (a break: is_break follows from the kind as before).
ALTER TABLE "ledger"."reconciliation_rows"
  DROP CONSTRAINT "reconciliation_rows_kind_check",
  ADD CONSTRAINT "reconciliation_rows_kind_check" CHECK ("kind" IN ('matched', 'pending', 'missing_in_ledger', 'missing_externally', 'amount_mismatch', 'duplicate', 'over_refund'));
