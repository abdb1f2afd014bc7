-- Balance reconciliation (issue 14 part 6): the breaks of the balance checks, payment channels against their escrow and
-- prepaid balances against their transfers and funding payments, are rows of their own kinds (breaks: is_break follows
-- from the kind as before).
ALTER TABLE "ledger"."reconciliation_rows"
  DROP CONSTRAINT "reconciliation_rows_kind_check",
  ADD CONSTRAINT "reconciliation_rows_kind_check" CHECK ("kind" IN ('matched', 'pending', 'missing_in_ledger', 'missing_externally', 'amount_mismatch', 'duplicate', 'over_refund',
    'channel_deposit_mismatch', 'channel_settled_mismatch', 'channel_refunded_mismatch', 'channel_not_finalized', 'channel_closed_on_chain_not_in_books',
    'channel_not_on_chain', 'channel_unknown_to_books', 'prepaid_funding_missing', 'prepaid_funding_mismatch', 'prepaid_balance_mismatch', 'prepaid_negative'));
