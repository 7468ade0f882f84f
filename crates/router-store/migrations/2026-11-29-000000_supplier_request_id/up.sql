-- Issue 30: the supplier's own id of each attempt (its `x-request-id` or
-- `request-id` reply header), so an operator can quote it to the supplier.
-- Nullable: older rows, and suppliers that send none, have no value.
ALTER TABLE attempts ADD COLUMN supplier_request_id text
    CHECK (supplier_request_id IS NULL OR length(supplier_request_id) BETWEEN 1 AND 200);
