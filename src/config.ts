/**
 * The service's whole configuration: environment variables validated by one
 * zod schema. Every policy number that SPEC.md leaves "not shown" lives here
 * with a documented default (see README, "Configuration").
 */
import { z } from 'zod';
import { DEFAULT_PORT, EMAIL_ADDRESS, localUrl, salesContactOf, type Urls } from './urls.ts';

const port = z.coerce.number().int().min(0).max(65535);
const positiveInt = z.coerce.number().int().positive();
const nonNegativeInt = z.coerce.number().int().nonnegative();
const url = z.url({ protocol: /^https?$/ }).transform((u) => u.replace(/\/+$/, ''));
const usd = z.string().regex(/^\d+(\.\d{1,6})?$/, 'a decimal USD amount such as "0.10"');

export const configSchema = z
  .object({
    NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
    PORT: port.default(DEFAULT_PORT),
    HOST: z.string().min(1).default('0.0.0.0'),
    BASE_URL: url.optional(),
    SITE_URL: url.optional(),
    DATABASE_URL: z
      .string()
      .regex(/^(file:|libsql:|https?:|wss?:|postgres(ql)?:\/\/)/, 'a file:, libsql:, http(s):, ws(s):, postgres:// or postgresql:// URL')
      .default('file:./data/fusegate.db'),
    /** PostgreSQL only: connections this process keeps open (one of them the write queue's). */
    DATABASE_POOL_MAX: z.coerce.number().int().min(2).max(1000).default(10),
    /**
     * PostgreSQL only: how long a request waits for a connection to a host that accepts writes before it
     * is answered 503 ledger_unavailable (no host accepts writes: the primary lost, no standby promoted yet).
     */
    DATABASE_CONNECT_WAIT_MS: z.coerce.number().int().min(100).max(60_000).default(5000),
    /**
     * PostgreSQL only: how long a write batch may take from its BEGIN to its COMMIT before its host is taken
     * as gone (a machine lost closes nothing) and the batch is answered 503 ledger_unavailable; the next batch
     * opens a new connection. Not applied to the migrations a node runs at its start.
     */
    DATABASE_WRITE_TIMEOUT_MS: z.coerce.number().int().min(1000).max(600_000).default(15_000),
    /**
     * How long a node's lease on a background job lasts, in ms (src/api/jobs.ts `leasedJob`): renewed
     * every third of it, so another node takes a job over within 4/3 of it (at most 10 s) once its holder stops.
     */
    JOB_LEASE_MS: z.coerce.number().int().min(1000).max(7500).default(6000),
    DATABASE_AUTH_TOKEN: z.string().optional(),
    /** FULL makes every acknowledged write survive power loss; NORMAL only a crash of the process. */
    DATABASE_SYNCHRONOUS: z.enum(['FULL', 'NORMAL']).default('FULL'),
    /** Where the Ed25519 signing keys live (created on first start, mode 0600). */
    SIGNING_KEY_FILE: z.string().min(1).default('./data/signing-keys.json'),
    /** Alternatively the private signing key itself, as a JWK JSON string (takes precedence). */
    SIGNING_KEY_JWK: z.string().optional(),
    /** Hops (and lookups) a key may make before the gate answers 402; per key, overridable at key creation. */
    HOP_LIMIT_DEFAULT: positiveInt.default(10000),
    /** The operator formula's floor in USD (SPEC 8.3 leaves the value open). */
    OPERATOR_FLOOR_USD: usd.default('0.10'),
    /** Signal mandates an account's platform includes; each one past them is charged mandate_overage (SPEC does not show the count). */
    SIGNAL_INCLUDED_MANDATES: nonNegativeInt.default(10),
    /** Public demo endpoints: requests per window per client address. */
    DEMO_RATE_LIMIT: positiveInt.default(30),
    DEMO_RATE_WINDOW_SECONDS: positiveInt.default(60),
    /** Lifetime of a bind ticket and the clock skew tolerated on a redeem's UTC now. */
    TICKET_TTL_SECONDS: positiveInt.default(900),
    TICKET_CLOCK_SKEW_SECONDS: nonNegativeInt.default(30),
    /** Lifetime of a pre-finality receipt JWT. */
    PREFINALITY_RECEIPT_TTL_SECONDS: positiveInt.default(600),
    /** How long a review a HOLD opens waits for a person before it expires (docs/reviews.md; ours: 24 h). */
    REVIEW_TTL_SECONDS: positiveInt.default(86_400),
    /**
     * Whether keyed requests are written to the request log (docs/request-log.md). On by default: the
     * bench's request-log section measures the hop with it on within its rounds' spread of it off.
     * `false` turns it off (nothing is recorded, GET /v1/requests answers `enabled: false`).
     */
    REQUEST_LOG_ENABLED: z.stringbool().default(true),
    /** How many days the request log keeps a keyed request (docs/request-log.md; ours: 30). */
    REQUEST_LOG_RETENTION_DAYS: positiveInt.default(30),
    /**
     * How often a process writes the keyed requests it answered to the request log, in ms (ours: 1000):
     * one multi-row insert then, never a write per request. A crash loses at most this much of the log.
     */
    REQUEST_LOG_FLUSH_MS: positiveInt.max(60_000).default(1000),
    /** A review of a request above this amount (USD) needs two approvers (docs/reviews.md); unset: one. */
    REVIEW_TWO_APPROVERS_ABOVE_USD: usd.optional(),
    /** The monthly spend cap (USD) every new account starts with (docs/accounts.md#spend-caps); unset: none. Its operators change it. */
    SPEND_CAP_ACCOUNT_DEFAULT_USD: z
      .string()
      .regex(/^\d{1,10}(\.\d{1,2})?$/, 'a decimal USD amount with at most two decimals, such as "100.00"')
      .optional(),
    /**
     * x402 payments (docs/x402.md): off unless X402_PAY_TO, X402_NETWORK, X402_ASSET and
     * X402_FACILITATOR_URL are all set (SPEC 5.4: x402_configured is false by default).
     */
    X402_PAY_TO: z.string().min(1).optional(),
    X402_NETWORK: z
      .string()
      .regex(/^[-a-z0-9]{3,8}:[-_a-zA-Z0-9]{1,32}$/, 'a CAIP-2 network id such as "eip155:84532"')
      .optional(),
    X402_ASSET: z.string().min(1).optional(),
    X402_ASSET_NAME: z.string().min(1).default('USDC'),
    X402_ASSET_VERSION: z.string().min(1).default('2'),
    /** Decimals of the asset's atomic unit; the price is the GO toll, 1 USD = 1 asset unit. */
    X402_ASSET_DECIMALS: z.coerce.number().int().min(0).max(36).default(6),
    X402_MAX_TIMEOUT_SECONDS: positiveInt.default(60),
    /** Largest request body accepted, in bytes (413 beyond). */
    MAX_BODY_BYTES: positiveInt.default(65536),
    /** Browser origins besides BASE_URL's and SITE_URL's that may call POST /mcp (comma separated). */
    MCP_ALLOWED_ORIGINS: z
      .string()
      .default('')
      .transform((s) =>
        s
          .split(',')
          .map((o) => o.trim())
          .filter(Boolean),
      )
      .pipe(z.array(url)),
    /** How many writes the write queue commits in one transaction at most. */
    WRITE_BATCH_MAX: positiveInt.default(512),
    /** Event-loop turns a write batch keeps gathering while writes still arrive (ledger/write-queue.ts); 0 takes the first turn's. */
    WRITE_BATCH_GATHER_TURNS: nonNegativeInt.max(64).default(3),
    /** How often the checkpointer thread moves the WAL's committed pages into the database file (ledger/drivers/embedded/checkpointer.ts). */
    WAL_CHECKPOINT_MS: positiveInt.default(200),
    /** Where `npm start` serves the built site from. */
    STATIC_DIR: z.string().min(1).default('./dist/client'),
    LOG_LEVEL: z.enum(['silent', 'error', 'info']).default('info'),
    /** Oracle aggregate: fewest readings for a value, % trimmed at each end, tolerated spread (bps of the value). */
    ORACLE_MIN_SOURCES: positiveInt.default(3),
    ORACLE_TRIM_PERCENT: z.coerce.number().int().min(0).max(49).default(20),
    ORACLE_TOLERANCE_BPS: nonNegativeInt.default(500),
    /** Webhook delivery: attempts before giving up, first retry delay (doubles each time, capped at an hour, ±25% jitter), timeout, poll period. */
    WEBHOOK_MAX_ATTEMPTS: positiveInt.default(16),
    WEBHOOK_BACKOFF_MS: positiveInt.default(5000),
    WEBHOOK_TIMEOUT_MS: positiveInt.default(5000),
    WEBHOOK_POLL_MS: positiveInt.default(1000),
    /** Webhook targets on loopback, private or link-local addresses: refused unless true (SSRF guard). */
    WEBHOOK_ALLOW_PRIVATE_TARGETS: z.stringbool().default(false),
    /** Inference-root proxy: the OpenAI-compatible base URL it forwards to (unset: 503), its bearer key (a secret: never logged), timeout, exchanges per session. */
    INFERENCE_UPSTREAM_URL: url.optional(),
    INFERENCE_UPSTREAM_KEY: z.string().min(1).optional(),
    INFERENCE_TIMEOUT_MS: positiveInt.default(60_000),
    INFERENCE_SESSION_MAX_EXCHANGES: positiveInt.default(10_000),
    /** Clearing checkpoints: hours between automatic seals (168 = weekly); 0 turns the timer off (the CLI still seals). */
    CLEARING_INTERVAL_HOURS: nonNegativeInt.default(168),

    // Issue 18, hardening (docs/hardening.md): HTTP server limits and proxy trust.
    /** Time a client has to send a request's headers, then its whole request (body included), before the socket is closed. */
    HTTP_HEADERS_TIMEOUT_MS: positiveInt.default(10_000),
    HTTP_REQUEST_TIMEOUT_MS: positiveInt.default(30_000),
    /** A connection with no request in flight that sends nothing for this long is closed. */
    HTTP_IDLE_TIMEOUT_MS: positiveInt.default(30_000),
    /** How long a kept-alive connection waits for its next request after an answer. */
    HTTP_KEEP_ALIVE_TIMEOUT_MS: positiveInt.default(5_000),
    /** Open connections at most; past it a new connection is closed at once. */
    HTTP_MAX_CONNECTIONS: positiveInt.default(4096),
    /** Open connections of one peer address at most (0: no per-address cap); past it the address's oldest idle one is closed. */
    HTTP_MAX_CONNECTIONS_PER_ADDRESS: nonNegativeInt.default(256),
    /** Reverse proxies in front of the service whose X-Forwarded-For / Forwarded entries are trusted (0: the socket address only). */
    TRUST_PROXY_HOPS: nonNegativeInt.max(10).default(0),
    /** A webhook subscription is disabled after this many failed delivery attempts in a row (or at once on 410 Gone). */
    WEBHOOK_DISABLE_AFTER_FAILURES: positiveInt.default(50),
    /** After `signing-key rotate`, webhook deliveries carry a signature by the previous key too, for this many hours (0: none). */
    WEBHOOK_KEY_OVERLAP_HOURS: nonNegativeInt.default(24),
    /** GET /v1/ocsp answers 503 halt when the ledger has not answered within this many ms. */
    OCSP_HALT_AFTER_MS: positiveInt.default(1000),
    /** /health's write probe: how long a write may take before /health reports the database unwritable. */
    HEALTH_WRITE_PROBE_TIMEOUT_MS: positiveInt.default(1000),
    // Issue 14: accounts, key lifecycle and hop quotas (docs/accounts.md).
    /** How long a rotated key's previous secret keeps working when the rotation names no grace (seconds; 0 = not at all). */
    KEY_ROTATION_GRACE_SECONDS: nonNegativeInt.default(86_400),
    /** The longest grace a rotation may ask for (seconds). */
    KEY_ROTATION_GRACE_MAX_SECONDS: nonNegativeInt.default(604_800),
    /** The period a key's hop limit counts over: it resets at the start of each UTC period ("none": never resets). */
    HOP_LIMIT_PERIOD: z.enum(['day', 'week', 'month', 'none']).default('month'),
    /** How long a dashboard sign-in lasts (seconds). */
    SESSION_TTL_SECONDS: positiveInt.default(604_800),
    /** Sign-in attempts allowed per window: per account (email) and per client address. */
    SIGNIN_MAX_ATTEMPTS: positiveInt.default(10),
    SIGNIN_MAX_ATTEMPTS_PER_ADDRESS: positiveInt.default(30),
    SIGNIN_WINDOW_SECONDS: positiveInt.default(900),
    /** Sign-up attempts allowed per client address per SIGNIN_WINDOW_SECONDS: bounds account creation and probing which emails exist. */
    SIGNUP_MAX_ATTEMPTS_PER_ADDRESS: positiveInt.default(10),
    /** Lifetime of a one-time password-reset link printed by `accounts reset-link`. */
    PASSWORD_RESET_TTL_SECONDS: positiveInt.default(3600),
    /** Lifetime of an invitation link to join an account (docs/accounts.md#team-accounts): a week. */
    INVITATION_TTL_SECONDS: positiveInt.default(7 * 86_400),
    /**
     * Outbound mail (password-reset links): `smtp://[user:pass@]host[:port]` (STARTTLS when the
     * server offers it) or `smtps://…` (TLS from the start, port 465). Unset: each mail is written
     * to the server log instead, so a self-hoster reads the link there.
     */
    MAIL_URL: z
      .string()
      .regex(/^smtps?:\/\/[^\s/]+\/?$/, 'smtp://[user:pass@]host[:port] or smtps://…')
      .optional(),
    /** The From address of outbound mail (default: no-reply at BASE_URL's host). */
    MAIL_FROM: z
      .string()
      .regex(/^[^\r\n<>]*<?[^\s@<>]+@[^\s@<>]+>?$/, 'an address such as "Fuse Gate <no-reply@gate.example>"')
      .optional(),
    /**
     * Where buyers reach sales for what is sold by contact (diligence, the bind-room deposit, relay
     * wholesale, the Signal platform, issuer-pays services; docs/pricing.md): an email address shown
     * on those prices' pages and in GET /api/v1/pricing. Default: sales@ SITE_URL's host name.
     */
    SALES_CONTACT: z.string().regex(EMAIL_ADDRESS, 'an email address such as sales@fusegate.example').optional(),
    /** The WebAuthn relying-party id passkeys are bound to (a domain; default: BASE_URL's host name). */
    WEBAUTHN_RP_ID: z
      .string()
      .regex(/^[a-z0-9.-]+$/, 'a domain such as gate.example')
      .optional(),

    // Issue 19, x402 payments (docs/x402.md). X402_FACILITATOR_URL joins X402_PAY_TO,
    // X402_NETWORK and X402_ASSET: all four or none, since without a facilitator no payment can be taken.
    /** The x402 facilitator's base URL (its /verify and /settle are called). */
    X402_FACILITATOR_URL: url.optional(),
    /** One header sent to the facilitator, "Name: value" (e.g. "Authorization: Bearer …"); a secret, never logged. */
    X402_FACILITATOR_AUTH_HEADER: z
      .string()
      .regex(/^[A-Za-z0-9-]{1,64}:\s*\S.*$/, 'a header such as "Authorization: Bearer <token>"')
      .optional(),
    /** How long a facilitator /verify or /settle may take before the payment is refused as unavailable. */
    X402_FACILITATOR_TIMEOUT_MS: positiveInt.default(10_000),
    /** A payment left settling (crash, settle timeout) is reconciled once it is this old, by a background job that runs this often. */
    X402_RECONCILE_AFTER_SECONDS: nonNegativeInt.default(60),

    // Issue 13, reads (docs/configuration.md, "Read caches"): how stale a cached read may be.
    /**
     * How long an authenticated key (and GET /v1/me's usage) is reused before it is read again, in ms.
     * A key revoked, rotated or re-limited by another process stops (or changes) within this bound;
     * changes made by this process apply at once. 0 turns the caches off; at most 1000.
     */
    AUTH_CACHE_MS: nonNegativeInt.max(1000).default(1000),

    // Issue 27, witnesses (docs/trust-core.md, "Witnesses"): C2SP tlog-witness.
    /** A witness policy file (witness / group / quorum lines); unset: no witnessing. A malformed file stops the start, naming its line. */
    WITNESS_POLICY: z.string().min(1).optional(),
    /** How long one add-checkpoint request may take before it counts as failed. */
    WITNESS_TIMEOUT_MS: positiveInt.default(3000),
    /** How often each log's newest checkpoint is offered to each witness (at most once per witness and log per period). */
    WITNESS_INTERVAL_MS: positiveInt.default(1000),
    /** After failures in a row, the wait before a witness is tried again doubles from WITNESS_INTERVAL_MS up to this. */
    WITNESS_MAX_BACKOFF_MS: positiveInt.default(60_000),
  })
  .superRefine((c, ctx) => {
    const x402 = ['X402_PAY_TO', 'X402_NETWORK', 'X402_ASSET', 'X402_FACILITATOR_URL'] as const;
    const set = x402.filter((k) => c[k] !== undefined);
    if (set.length > 0 && set.length < x402.length) {
      for (const k of x402.filter((k) => c[k] === undefined)) {
        ctx.addIssue({ code: 'custom', path: [k], message: `x402 needs ${x402.join(', ')} together` });
      }
    }
  });

export type RawConfig = z.infer<typeof configSchema>;
export type Config = Omit<RawConfig, 'BASE_URL' | 'SITE_URL'> & { BASE_URL: string; SITE_URL: string };

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Parses the environment; throws a ConfigError naming every bad variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const relevant = Object.fromEntries(
    Object.keys(configSchema.shape)
      .filter((k) => env[k] !== undefined && env[k] !== '')
      .map((k) => [k, env[k]]),
  );
  const parsed = configSchema.safeParse(relevant);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
  }
  const c = parsed.data;
  const local = localUrl(c.PORT);
  return { ...c, BASE_URL: c.BASE_URL ?? local, SITE_URL: c.SITE_URL ?? c.BASE_URL ?? local };
}

/** What the served documents name (src/urls.ts): the two surfaces' URLs and the sales contact. */
export function servedUrls(c: Config): Urls {
  return { site: c.SITE_URL, gate: c.BASE_URL, salesContact: salesContactOf(c) };
}

/** True when a public URL still names this machine (SPEC 4.1: /health is 503 then, in production). */
export function isLocalUrl(u: string): boolean {
  const host = new URL(u).hostname;
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\./.test(host) || host === '0.0.0.0';
}

/**
 * The configuration once the server listens: with PORT 0 the system picked a
 * port, so the default URLs (http://localhost:0) become the real ones. URLs
 * that were set explicitly are kept.
 */
export function withListeningPort(c: Config, port: number): Config {
  if (c.PORT !== 0) return c;
  const fix = (u: string) => (u === localUrl(0) ? localUrl(port) : u);
  return { ...c, PORT: port, BASE_URL: fix(c.BASE_URL), SITE_URL: fix(c.SITE_URL) };
}

/**
 * Why the advertised URLs cannot be this service, or undefined. A URL on this
 * machine must name the port the service listens on; in production neither
 * may be on this machine at all (SPEC 4.1: /health is 503 then).
 */
export function advertisedUrlProblem(c: Config): string | undefined {
  const urls = [c.BASE_URL, c.SITE_URL];
  if (c.NODE_ENV === 'production' && urls.some(isLocalUrl)) return 'production still advertises localhost in BASE_URL or SITE_URL';
  const elsewhere = urls.find((u) => isLocalUrl(u) && portOf(u) !== c.PORT);
  if (elsewhere) return `${elsewhere} is on this machine but not on the port this service listens on (${c.PORT})`;
  return undefined;
}

function portOf(u: string): number {
  const url = new URL(u);
  return url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
}
