-- The delivery worker claims due attempts in (due_at, id) order, up to a batch. An index on
-- (status, due_at) alone left the `id` tie-break to a sort of every due PENDING row (claimed
-- ones included) on each claim, so a storm's queue made each claim as slow as the queue was
-- long while it held the one writer. With `id` in the index the claim walks the index in order
-- and stops at its batch.
DROP INDEX deliveries_due;
CREATE INDEX deliveries_due ON deliveries (status, due_at, id);
