-- Issuer-pays index listings (SPEC 2.4 stack step 11, "list on the index"): a vendor listed
-- for a year by a vendor_listing_annual charge; public once written.
CREATE TABLE issuer_listings (
  vendor TEXT NOT NULL,
  account_id TEXT NOT NULL,
  name TEXT NOT NULL,
  url TEXT,
  listed_at TEXT NOT NULL,
  listed_until TEXT NOT NULL,
  receipt_id TEXT NOT NULL,
  PRIMARY KEY (vendor, listed_at)
);
CREATE INDEX issuer_listings_until ON issuer_listings (vendor, listed_until);
