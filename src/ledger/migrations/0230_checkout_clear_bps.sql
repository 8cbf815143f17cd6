-- The month's bps fee on cleared exposure (SPEC 1, 2.4), billed by the month's checkout as its
-- own meter line (sku clear_bps); checkouts written before this charged none of it.
ALTER TABLE operator_checkouts ADD COLUMN clear_bps_micros INTEGER NOT NULL DEFAULT 0;
ALTER TABLE operator_checkouts ADD COLUMN clear_tier TEXT;
