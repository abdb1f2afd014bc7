-- The plain locked-SQL ledger bench/ledger.mjs drives with pgbench beside ours (issue 15): about the most one
-- transaction per transfer allows in PostgreSQL. Lock both accounts in id order, check the debit account's limit,
-- insert the transfer idempotently (its id unique), update two balances. Nothing else: no journal rows, no
-- pending transfers, no codes, no assets.
DROP SCHEMA IF EXISTS plain CASCADE;
CREATE SCHEMA plain;

CREATE TABLE plain.accounts (
  id bigint PRIMARY KEY,
  balance numeric NOT NULL DEFAULT 0,
  -- a limited account cannot go below zero (our ledger's debits_must_not_exceed_credits)
  limited boolean NOT NULL
);

CREATE TABLE plain.transfers (
  id uuid PRIMARY KEY,
  debit_account_id bigint NOT NULL,
  credit_account_id bigint NOT NULL,
  amount numeric NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE FUNCTION plain.transfer(p_id uuid, p_debit bigint, p_credit bigint, p_amount numeric) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  v_balance numeric;
  v_limited boolean;
BEGIN
  IF p_debit = p_credit OR p_amount <= 0 THEN
    RETURN 'invalid';
  END IF;
  PERFORM 1 FROM plain.accounts WHERE id IN (p_debit, p_credit) ORDER BY id FOR UPDATE;
  SELECT balance, limited INTO v_balance, v_limited FROM plain.accounts WHERE id = p_debit;
  IF v_limited AND v_balance < p_amount THEN
    RETURN 'exceeds_balance';
  END IF;
  INSERT INTO plain.transfers (id, debit_account_id, credit_account_id, amount)
    VALUES (p_id, p_debit, p_credit, p_amount) ON CONFLICT (id) DO NOTHING;
  IF NOT FOUND THEN
    RETURN 'exists';
  END IF;
  UPDATE plain.accounts SET balance = balance - p_amount WHERE id = p_debit;
  UPDATE plain.accounts SET balance = balance + p_amount WHERE id = p_credit;
  RETURN 'created';
END
$$;

-- A batch in one transaction: every account it touches locked first, in id order (so two batches cannot deadlock),
-- then each transfer as above. Answers how many were created.
CREATE FUNCTION plain.transfer_batch(p_debits bigint[], p_credits bigint[], p_amounts numeric[]) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
  v_created int := 0;
BEGIN
  PERFORM 1 FROM plain.accounts WHERE id = ANY (p_debits || p_credits) ORDER BY id FOR UPDATE;
  FOR i IN 1 .. cardinality(p_debits) LOOP
    IF plain.transfer(gen_random_uuid(), p_debits[i], p_credits[i], p_amounts[i]) = 'created' THEN
      v_created := v_created + 1;
    END IF;
  END LOOP;
  RETURN v_created;
END
$$;
