-- Hop quota per period (issue 14): hops_used counts within period_start's period
-- (hop_period: day, week, month or none) and starts again at the next one. Every
-- existing key counts monthly from its next hop (period_start NULL = no period yet).
ALTER TABLE api_keys ADD COLUMN hop_period TEXT NOT NULL DEFAULT 'month' CHECK (hop_period IN ('day', 'week', 'month', 'none'));
ALTER TABLE api_keys ADD COLUMN period_start TEXT;
