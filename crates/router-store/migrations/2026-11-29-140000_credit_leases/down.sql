ALTER TABLE holds DROP COLUMN lease_id;
DROP TABLE credit_leases;
