/**
 * Every operation of the service, for the typed client (src/client.ts): written
 * by scripts/write-client.ts from the operations' declarations (src/api/client-gen.ts).
 * Do not edit: `npm run build` writes it again, and a test checks it is current.
 */

export const OPERATIONS = {
  getHealth: { method: 'GET', path: '/health', auth: 'public', x402: false, input: 'none', params: [] },
  me: { method: 'GET', path: '/v1/me', auth: 'key', x402: false, input: 'none', params: [] },
  getCryptoPublicKey: { method: 'GET', path: '/crypto/public-key', auth: 'public', x402: false, input: 'none', params: [] },
  receipt_get: { method: 'GET', path: '/v1/receipts/:receipt_id', auth: 'public', x402: false, input: 'none', params: ['receipt_id'] },
  receipt_verify: { method: 'POST', path: '/v1/receipts/verify', auth: 'public', x402: false, input: 'body', params: [] },
  fuse_create: { method: 'POST', path: '/v1/fuses', auth: 'operator', x402: false, input: 'body', params: [] },
  fuses_list: { method: 'GET', path: '/v1/fuses', auth: 'key', x402: false, input: 'query', params: [] },
  fuse_blow: { method: 'POST', path: '/v1/fuses/:fuse_id/dead', auth: 'key', x402: false, input: 'none', params: ['fuse_id'] },
  fuse_charge: { method: 'POST', path: '/v1/fuses/:fuse_id/charge', auth: 'operator', x402: false, input: 'none', params: ['fuse_id'] },
  alerts_create: { method: 'POST', path: '/v1/alerts', auth: 'operator', x402: false, input: 'body', params: [] },
  alerts: { method: 'GET', path: '/v1/alerts', auth: 'key', x402: false, input: 'none', params: [] },
  alerts_remove: { method: 'POST', path: '/v1/alerts/:alert_id/remove', auth: 'operator', x402: false, input: 'none', params: ['alert_id'] },
  reviews_list: { method: 'GET', path: '/v1/reviews', auth: 'key', x402: false, input: 'query', params: [] },
  review_get: { method: 'GET', path: '/v1/reviews/:review_id', auth: 'key', x402: false, input: 'query', params: ['review_id'] },
  review_approve: { method: 'POST', path: '/v1/reviews/:review_id/approve', auth: 'operator', x402: false, input: 'body', params: ['review_id'] },
  review_deny: { method: 'POST', path: '/v1/reviews/:review_id/deny', auth: 'operator', x402: false, input: 'body', params: ['review_id'] },
  fuse_hop: { method: 'POST', path: '/v1/fuse/hop', auth: 'key', x402: true, input: 'body', params: [] },
  fuse_lookup: { method: 'GET', path: '/v1/fuse/lookup', auth: 'key', x402: true, input: 'query', params: [] },
  ocsp: { method: 'GET', path: '/v1/ocsp', auth: 'key', x402: false, input: 'query', params: [] },
  act: { method: 'POST', path: '/v1/act', auth: 'key', x402: true, input: 'body', params: [] },
  classify: { method: 'POST', path: '/v1/classify', auth: 'key', x402: true, input: 'body', params: [] },
  execute_gate_demo: { method: 'POST', path: '/v1/execute-gate/demo', auth: 'key', x402: false, input: 'body', params: [] },
  demo_hop: { method: 'POST', path: '/demo/hop', auth: 'demo', x402: false, input: 'body', params: [] },
  demo_act: { method: 'POST', path: '/demo/act', auth: 'demo', x402: false, input: 'body', params: [] },
  demo_lookup: { method: 'GET', path: '/demo/lookup', auth: 'demo', x402: false, input: 'query', params: [] },
  getApiV1Logs: { method: 'GET', path: '/api/v1/logs', auth: 'public', x402: false, input: 'none', params: [] },
  getApiV1LogsByLog: { method: 'GET', path: '/api/v1/logs/:log', auth: 'public', x402: false, input: 'none', params: ['log'] },
  getApiV1LogsByLogCheckpoint: { method: 'GET', path: '/api/v1/logs/:log/checkpoint', auth: 'public', x402: false, input: 'query', params: ['log'] },
  getApiV1LogsByLogGrowth: { method: 'GET', path: '/api/v1/logs/:log/growth', auth: 'public', x402: false, input: 'query', params: ['log'] },
  getApiV1LogsByLogEntries: { method: 'GET', path: '/api/v1/logs/:log/entries', auth: 'public', x402: false, input: 'query', params: ['log'] },
  getApiV1LogsByLogProofInclusion: { method: 'GET', path: '/api/v1/logs/:log/proof/inclusion', auth: 'public', x402: false, input: 'query', params: ['log'] },
  getApiV1LogsByLogProofConsistency: { method: 'GET', path: '/api/v1/logs/:log/proof/consistency', auth: 'public', x402: false, input: 'query', params: ['log'] },
  getReceiptsCheckpoint: { method: 'GET', path: '/receipts/checkpoint', auth: 'public', x402: false, input: 'none', params: [] },
  getAstlCheckpoint: { method: 'GET', path: '/astl/checkpoint', auth: 'public', x402: false, input: 'none', params: [] },
  getTriggersCheckpoint: { method: 'GET', path: '/triggers/checkpoint', auth: 'public', x402: false, input: 'none', params: [] },
  getClearingCheckpoint: { method: 'GET', path: '/clearing/checkpoint', auth: 'public', x402: false, input: 'none', params: [] },
  getWellKnownCaptureJson: { method: 'GET', path: '/.well-known/capture.json', auth: 'public', x402: false, input: 'none', params: [] },
  getWellKnownRestraintJson: { method: 'GET', path: '/.well-known/restraint.json', auth: 'public', x402: false, input: 'none', params: [] },
  getWellKnownListingsJson: { method: 'GET', path: '/.well-known/listings.json', auth: 'public', x402: false, input: 'none', params: [] },
  getWellKnownRegisterJson: { method: 'GET', path: '/.well-known/register.json', auth: 'public', x402: false, input: 'none', params: [] },
  receipts_openings: { method: 'GET', path: '/v1/receipts/:receipt_id/openings', auth: 'key', x402: false, input: 'none', params: ['receipt_id'] },
  fuse_heartbeat: { method: 'POST', path: '/v1/fuse/heartbeat', auth: 'key', x402: true, input: 'body', params: [] },
  receipts_verify_pull: { method: 'POST', path: '/v1/receipts/verify-pull', auth: 'key', x402: true, input: 'body', params: [] },
  fuses_panic: { method: 'POST', path: '/v1/fuses/:fuse_id/panic', auth: 'key', x402: true, input: 'body', params: ['fuse_id'] },
  spoliation_seal_matter: { method: 'POST', path: '/api/v1/spoliation-seal/matter', auth: 'key', x402: true, input: 'body', params: [] },
  foundry_parametric_run: { method: 'POST', path: '/api/v1/foundry/parametric/run', auth: 'key', x402: true, input: 'body', params: [] },
  clear_before: { method: 'POST', path: '/api/v1/clear/before', auth: 'key', x402: true, input: 'body', params: [] },
  issuer_pays_listings_create: { method: 'POST', path: '/api/v1/issuer-pays/listings', auth: 'operator', x402: false, input: 'body', params: [] },
  getApiV1IssuerPaysListings: { method: 'GET', path: '/api/v1/issuer-pays/listings', auth: 'public', x402: false, input: 'none', params: [] },
  gam_credits_purchase: { method: 'POST', path: '/api/v1/gam/credits/purchase', auth: 'operator', x402: false, input: 'body', params: [] },
  gam_credits_balance: { method: 'GET', path: '/api/v1/gam/credits/balance', auth: 'key', x402: false, input: 'none', params: [] },
  signal_mandates_create: { method: 'POST', path: '/signal/mandates', auth: 'operator', x402: false, input: 'body', params: [] },
  signal_patterns: { method: 'GET', path: '/signal/patterns.json', auth: 'key', x402: false, input: 'none', params: [] },
  getApiV1LogsByLogSearch: { method: 'GET', path: '/api/v1/logs/:log/search', auth: 'public', x402: false, input: 'query', params: ['log'] },
  prefinality_evaluate: { method: 'POST', path: '/v1/prefinality/evaluate', auth: 'key', x402: true, input: 'body', params: [] },
  demo_prefinality_evaluate: { method: 'POST', path: '/demo/prefinality/evaluate', auth: 'demo', x402: false, input: 'body', params: [] },
  prefinality_verify: { method: 'POST', path: '/v1/prefinality/verify', auth: 'public', x402: false, input: 'body', params: [] },
  rtp_gate: { method: 'POST', path: '/v1/prefinality/rtp/gate', auth: 'key', x402: true, input: 'body', params: [] },
  getWellKnownPrefinalityJwksJson: { method: 'GET', path: '/.well-known/prefinality-jwks.json', auth: 'public', x402: false, input: 'none', params: [] },
  getWellKnownPrefinalityJson: { method: 'GET', path: '/.well-known/prefinality.json', auth: 'public', x402: false, input: 'none', params: [] },
  pas_license: { method: 'GET', path: '/v1/pas/licenses/:license_id', auth: 'key', x402: false, input: 'none', params: ['license_id'] },
  pas_license_charge: { method: 'POST', path: '/v1/pas/licenses/:license_id/charge', auth: 'operator', x402: false, input: 'none', params: ['license_id'] },
  pas_license_blow: { method: 'POST', path: '/v1/pas/licenses/:license_id/dead', auth: 'key', x402: false, input: 'none', params: ['license_id'] },
  pas_a_pre_bind: { method: 'POST', path: '/v1/pas/pas-a/pre-bind', auth: 'key', x402: true, input: 'body', params: [] },
  pas_ticket_redeem: { method: 'POST', path: '/v1/pas/bind-ticket/redeem', auth: 'key', x402: true, input: 'body', params: [] },
  pas_exclusion: { method: 'GET', path: '/v1/pas/exclusion', auth: 'key', x402: false, input: 'query', params: [] },
  pas_bind_check: { method: 'POST', path: '/v1/pas/bind-check', auth: 'key', x402: true, input: 'body', params: [] },
  pas_bind_appendix: { method: 'GET', path: '/v1/pas/bind-appendix', auth: 'key', x402: false, input: 'query', params: [] },
  pas_b_pre_bind: { method: 'POST', path: '/v1/pas/pas-b/pre-bind', auth: 'key', x402: true, input: 'body', params: [] },
  pas_mga_authority: { method: 'POST', path: '/v1/pas/mga-authority', auth: 'key', x402: true, input: 'body', params: [] },
  demo_pas_bind_check: { method: 'POST', path: '/demo/pas/bind-check', auth: 'demo', x402: false, input: 'body', params: [] },
  demo_pas_mga_authority: { method: 'POST', path: '/demo/pas/mga-authority', auth: 'demo', x402: false, input: 'body', params: [] },
  demo_pas_a_pre_bind: { method: 'POST', path: '/demo/pas/pas-a/pre-bind', auth: 'demo', x402: false, input: 'body', params: [] },
  astl_publish: { method: 'POST', path: '/api/v1/astl/publish', auth: 'key', x402: true, input: 'body', params: [] },
  astl_lookup: { method: 'GET', path: '/api/v1/astl/lookup', auth: 'public', x402: false, input: 'query', params: [] },
  astl_verify: { method: 'POST', path: '/api/v1/astl/verify', auth: 'public', x402: false, input: 'body', params: [] },
  getApiV1AstlLogJson: { method: 'GET', path: '/api/v1/astl/log.json', auth: 'public', x402: false, input: 'query', params: [] },
  getApiV1AstlScale: { method: 'GET', path: '/api/v1/astl/scale', auth: 'public', x402: false, input: 'query', params: [] },
  absence_witness: { method: 'POST', path: '/api/v1/absence/witness', auth: 'key', x402: true, input: 'body', params: [] },
  absence_verify: { method: 'POST', path: '/standards/absence-ledger/verify', auth: 'public', x402: false, input: 'body', params: [] },
  getApiV1AbsenceScale: { method: 'GET', path: '/api/v1/absence/scale', auth: 'public', x402: false, input: 'query', params: [] },
  oracle_aggregate: { method: 'POST', path: '/api/v1/oracle/aggregate', auth: 'key', x402: true, input: 'body', params: [] },
  trigger_publish: { method: 'POST', path: '/signal/trigger/publish', auth: 'key', x402: true, input: 'body', params: [] },
  trigger_fire: { method: 'POST', path: '/api/v1/foundry/trigger/fire', auth: 'key', x402: false, input: 'body', params: [] },
  getSignalTriggerFeedJson: { method: 'GET', path: '/signal/trigger/feed.json', auth: 'public', x402: false, input: 'query', params: [] },
  getSignalTriggerOracle: { method: 'GET', path: '/signal/trigger-oracle', auth: 'public', x402: false, input: 'none', params: [] },
  signal_trigger_webhooks_create: { method: 'POST', path: '/signal/trigger/webhooks', auth: 'operator', x402: false, input: 'body', params: [] },
  signal_trigger_webhooks: { method: 'GET', path: '/signal/trigger/webhooks', auth: 'key', x402: false, input: 'none', params: [] },
  getApiV1ClearingNetworkLatestJson: { method: 'GET', path: '/api/v1/clearing/network/latest.json', auth: 'public', x402: false, input: 'none', params: [] },
  getApiV1ClearingCatalog: { method: 'GET', path: '/api/v1/clearing/catalog', auth: 'public', x402: false, input: 'none', params: [] },
  execute_gate: { method: 'POST', path: '/api/v1/execute-gate', auth: 'key', x402: true, input: 'body', params: [] },
  execute_gate_bind: { method: 'POST', path: '/api/v1/execute-gate/bind', auth: 'key', x402: true, input: 'body', params: [] },
  restraint: { method: 'POST', path: '/api/v1/restraint', auth: 'key', x402: true, input: 'body', params: [] },
  clear_exposure: { method: 'GET', path: '/api/v1/clear/exposure', auth: 'key', x402: false, input: 'query', params: [] },
  clear_usage: { method: 'GET', path: '/api/v1/clear/usage', auth: 'key', x402: false, input: 'query', params: [] },
  getApiV1ClearNetwork: { method: 'GET', path: '/api/v1/clear/network', auth: 'public', x402: false, input: 'query', params: [] },
  counterfactual_replay: { method: 'POST', path: '/tcb/counterfactual-replay', auth: 'key', x402: true, input: 'body', params: [] },
  spoliation_seal: { method: 'POST', path: '/api/v1/spoliation-seal', auth: 'key', x402: true, input: 'body', params: [] },
  nap_usage: { method: 'GET', path: '/api/v1/nap/usage', auth: 'key', x402: false, input: 'none', params: [] },
  pdtr_bind_payment: { method: 'POST', path: '/api/v1/bind-payment', auth: 'key', x402: true, input: 'body', params: [] },
  orn_declare: { method: 'POST', path: '/api/v1/orn/declare', auth: 'key', x402: true, input: 'body', params: [] },
  orn_sharp: { method: 'POST', path: '/api/v1/orn/sharp', auth: 'key', x402: true, input: 'body', params: [] },
  relay_enroll: { method: 'POST', path: '/api/v1/relay/enroll', auth: 'operator', x402: false, input: 'body', params: [] },
  getApiV1RelayNetwork: { method: 'GET', path: '/api/v1/relay/network', auth: 'public', x402: false, input: 'none', params: [] },
  getGoByPartnerByTarget: { method: 'GET', path: '/go/:partner/:target', auth: 'public', x402: false, input: 'none', params: ['partner', 'target'] },
  getWellKnownAgentActionsJson: { method: 'GET', path: '/.well-known/agent-actions.json', auth: 'public', x402: false, input: 'none', params: [] },
  postApiV1RequireReceiptDemoPay: { method: 'POST', path: '/api/v1/require-receipt/demo/pay', auth: 'demo', x402: false, input: 'body', params: [] },
  depository_attest: { method: 'POST', path: '/api/v1/depository/attest', auth: 'key', x402: true, input: 'body', params: [] },
  getApiV1NapScale: { method: 'GET', path: '/api/v1/nap/scale', auth: 'public', x402: false, input: 'query', params: [] },
  getApiV1PdtrScale: { method: 'GET', path: '/api/v1/pdtr/scale', auth: 'public', x402: false, input: 'query', params: [] },
  getApiV1OrnScale: { method: 'GET', path: '/api/v1/orn/scale', auth: 'public', x402: false, input: 'query', params: [] },
  getApiV1RequireReceiptScale: { method: 'GET', path: '/api/v1/require-receipt/scale', auth: 'public', x402: false, input: 'query', params: [] },
  conformity_generate: { method: 'POST', path: '/api/v1/conformity/generate', auth: 'key', x402: true, input: 'body', params: [] },
  conformity_pack: { method: 'GET', path: '/api/v1/conformity/packs/:pack_id', auth: 'key', x402: false, input: 'none', params: ['pack_id'] },
  getApiV1FoundryCatalogJson: { method: 'GET', path: '/api/v1/foundry/catalog.json', auth: 'public', x402: false, input: 'none', params: [] },
  foundry_pipeline_run: { method: 'POST', path: '/api/v1/foundry/pipeline/run', auth: 'key', x402: true, input: 'body', params: [] },
  foundry_projection: { method: 'GET', path: '/api/v1/foundry/projection/:tenant_id', auth: 'key', x402: false, input: 'query', params: ['tenant_id'] },
  inference_chat: { method: 'POST', path: '/api/v1/inference/chat/completions', auth: 'key', x402: true, input: 'body', params: [] },
  inference_session: { method: 'GET', path: '/api/v1/inference/sessions/:session_id', auth: 'key', x402: false, input: 'none', params: ['session_id'] },
  inference_reasoning_seal: { method: 'POST', path: '/api/v1/inference/reasoning-seal', auth: 'key', x402: true, input: 'body', params: [] },
  getWellKnownMcpJson: { method: 'GET', path: '/.well-known/mcp.json', auth: 'public', x402: false, input: 'none', params: [] },
  getOpenapiJson: { method: 'GET', path: '/openapi.json', auth: 'public', x402: false, input: 'none', params: [] },
  keys_list: { method: 'GET', path: '/v1/keys', auth: 'operator', x402: false, input: 'query', params: [] },
  keys_create: { method: 'POST', path: '/v1/keys', auth: 'operator', x402: false, input: 'body', params: [] },
  keys_get: { method: 'GET', path: '/v1/keys/:key_id', auth: 'operator', x402: false, input: 'none', params: ['key_id'] },
  keys_revoke: { method: 'POST', path: '/v1/keys/:key_id/revoke', auth: 'operator', x402: false, input: 'none', params: ['key_id'] },
  keys_rotate: { method: 'POST', path: '/v1/keys/:key_id/rotate', auth: 'operator', x402: false, input: 'body', params: ['key_id'] },
  keys_limit: { method: 'POST', path: '/v1/keys/:key_id/limit', auth: 'operator', x402: false, input: 'body', params: ['key_id'] },
  keys_expiry: { method: 'POST', path: '/v1/keys/:key_id/expiry', auth: 'operator', x402: false, input: 'body', params: ['key_id'] },
  pas_licenses: { method: 'GET', path: '/v1/pas/licenses', auth: 'key', x402: false, input: 'none', params: [] },
  pas_tickets: { method: 'GET', path: '/v1/pas/tickets', auth: 'key', x402: false, input: 'query', params: [] },
  pas_grants: { method: 'GET', path: '/v1/pas/grants', auth: 'operator', x402: false, input: 'none', params: [] },
  pas_grants_create: { method: 'POST', path: '/v1/pas/grants', auth: 'operator', x402: false, input: 'body', params: [] },
  pas_grants_revoke: { method: 'POST', path: '/v1/pas/grants/:grant_id/revoke', auth: 'operator', x402: false, input: 'none', params: ['grant_id'] },
  signal_trigger_webhooks_deliveries_retry: { method: 'POST', path: '/signal/trigger/webhooks/deliveries/:delivery_id/retry', auth: 'operator', x402: false, input: 'none', params: ['delivery_id'] },
  operator_checkout: { method: 'POST', path: '/v1/operator/checkout', auth: 'operator', x402: false, input: 'body', params: [] },
  getApiV1Pricing: { method: 'GET', path: '/api/v1/pricing', auth: 'public', x402: false, input: 'none', params: [] },
  getWellKnownX402Json: { method: 'GET', path: '/.well-known/x402.json', auth: 'public', x402: false, input: 'none', params: [] },
  getWellKnownX402: { method: 'GET', path: '/.well-known/x402', auth: 'public', x402: false, input: 'none', params: [] },
  getWellKnownX402BazaarJson: { method: 'GET', path: '/.well-known/x402-bazaar.json', auth: 'public', x402: false, input: 'none', params: [] },
} as const;

export type OperationName = keyof typeof OPERATIONS;

/** What each operation takes: its path parameters and its JSON body or query. */
export interface OperationInput {
  getHealth: Record<string, never>;
  me: Record<string, never>;
  getCryptoPublicKey: Record<string, never>;
  receipt_get: {
    receipt_id: string;
  };
  receipt_verify: {
    receipt: string | {
      leaf: string;
      receipt: string | null;
      payload: {
        [key: string]: unknown;
      };
      log: {
        name: string;
        index: number;
        origin?: string;
        verifier_key: string;
        [key: string]: unknown;
      };
      inclusion: {
        tree_size: number;
        leaf_hash: string;
        hashes: Array<string>;
        [key: string]: unknown;
      };
      checkpoint: string;
      checkpoint_jws?: string | null;
      [key: string]: unknown;
    };
  };
  fuse_create: {
    state?: "LIVE" | "UNSIGNED";
    label?: string;
  };
  fuses_list: {
    limit?: number;
    starting_after?: string;
  };
  fuse_blow: {
    fuse_id: string;
  };
  fuse_charge: {
    fuse_id: string;
  };
  alerts_create: {
    url: string;
    events?: Array<"fuse.state_changed" | "hop.denied" | "review.opened" | "review.decided" | "review.expired">;
    fuse_id?: string;
  };
  alerts: Record<string, never>;
  alerts_remove: {
    alert_id: string;
  };
  reviews_list: {
    state?: "pending" | "approved" | "denied" | "expired";
    limit?: number;
  };
  review_get: {
    review_id: string;
  } & {
    wait?: number;
  };
  review_approve: {
    review_id: string;
  } & {
    note?: string;
  };
  review_deny: {
    review_id: string;
  } & {
    note?: string;
  };
  fuse_hop: {
    fuse_id: string;
    action?: {
      kind: string;
      [key: string]: unknown;
    };
    tool?: string;
  };
  fuse_lookup: {
    fuse_id: string;
  };
  ocsp: {
    fuse_id: string;
  };
  act: {
    fuse_id: string;
    action: {
      kind: string;
      [key: string]: unknown;
    };
  };
  classify: {
    action?: {
      kind: string;
      [key: string]: unknown;
    };
    text?: string;
  };
  execute_gate_demo: {
    fuse_id: string;
    action: {
      kind: string;
      [key: string]: unknown;
    };
  };
  demo_hop: {
    fuse_id?: string;
    action?: {
      kind: string;
      [key: string]: unknown;
    };
  };
  demo_act: {
    fuse_id?: string;
    action: {
      kind: string;
      [key: string]: unknown;
    };
  };
  demo_lookup: {
    fuse_id?: string;
  };
  getApiV1Logs: Record<string, never>;
  getApiV1LogsByLog: {
    log: string;
  };
  getApiV1LogsByLogCheckpoint: {
    log: string;
  } & {
    size?: number;
    witnessed?: "true" | "false";
  };
  getApiV1LogsByLogGrowth: {
    log: string;
  } & {
    points?: number;
  };
  getApiV1LogsByLogEntries: {
    log: string;
  } & {
    start?: number;
    limit?: number;
  };
  getApiV1LogsByLogProofInclusion: {
    log: string;
  } & {
    index: number;
    tree_size: number;
  };
  getApiV1LogsByLogProofConsistency: {
    log: string;
  } & {
    from: number;
    to: number;
  };
  getReceiptsCheckpoint: Record<string, never>;
  getAstlCheckpoint: Record<string, never>;
  getTriggersCheckpoint: Record<string, never>;
  getClearingCheckpoint: Record<string, never>;
  getWellKnownCaptureJson: Record<string, never>;
  getWellKnownRestraintJson: Record<string, never>;
  getWellKnownListingsJson: Record<string, never>;
  getWellKnownRegisterJson: Record<string, never>;
  receipts_openings: {
    receipt_id: string;
  };
  fuse_heartbeat: {
    fuse_id: string;
  };
  receipts_verify_pull: {
    receipt_id: string;
  };
  fuses_panic: {
    fuse_id: string;
  } & {
    reason?: string;
  };
  spoliation_seal_matter: {
    matter_ref: string;
  };
  foundry_parametric_run: {
    trigger_id: string;
  };
  clear_before: {
    tier: "act" | "wire" | "contract";
    fuse_id: string;
    action: {
      kind: string;
      [key: string]: unknown;
    };
    exposure_usd?: string;
    hold_above_usd?: string;
    review_requested?: boolean;
  };
  issuer_pays_listings_create: {
    vendor: string;
    name: string;
    url?: string;
  };
  getApiV1IssuerPaysListings: Record<string, never>;
  gam_credits_purchase: {
    sku: "clearing_annual" | "clearing_quarterly";
  };
  gam_credits_balance: Record<string, never>;
  signal_mandates_create: {
    metric: string;
  };
  signal_patterns: Record<string, never>;
  getApiV1LogsByLogSearch: {
    log: string;
  } & {
    q: string;
    by?: "index" | "receipt_id" | "leaf_hash" | "fuse_id";
  };
  prefinality_evaluate: {
    rail: "x402" | "rtp";
    transfer: {
      account_number?: string;
      amount?: string;
      counterparty?: string;
      currency?: string;
      routing_number?: string;
    };
    mandate?: {
      max_amount?: string;
      currency?: string;
      counterparties?: Array<string>;
      rails?: Array<"x402" | "rtp">;
      expires_at?: string;
      review_above?: string;
      review_expires_in_seconds?: number;
    };
    context?: {
      fuse_id?: string;
      risk_flags?: Array<string>;
      review_requested?: boolean;
      tool?: string;
      [key: string]: unknown;
    };
    review_id?: string;
  };
  demo_prefinality_evaluate: {
    rail: "x402" | "rtp";
    transfer: {
      account_number?: string;
      amount?: string;
      counterparty?: string;
      currency?: string;
      routing_number?: string;
    };
    mandate?: {
      max_amount?: string;
      currency?: string;
      counterparties?: Array<string>;
      rails?: Array<"x402" | "rtp">;
      expires_at?: string;
      review_above?: string;
      review_expires_in_seconds?: number;
    };
    context?: {
      fuse_id?: string;
      risk_flags?: Array<string>;
      review_requested?: boolean;
      tool?: string;
      [key: string]: unknown;
    };
    review_id?: string;
  };
  prefinality_verify: {
    receipt: string;
  };
  rtp_gate: {
    receipt: string;
    payment_order: {
      amount: string;
      currency: string;
      account_number: string;
      routing_number: string;
      counterparty: string;
      order_id?: string;
    };
  };
  getWellKnownPrefinalityJwksJson: Record<string, never>;
  getWellKnownPrefinalityJson: Record<string, never>;
  pas_license: {
    license_id: string;
  };
  pas_license_charge: {
    license_id: string;
  };
  pas_license_blow: {
    license_id: string;
  };
  pas_a_pre_bind: {
    fuse_id: string;
    license_id: string;
    job_id: string;
    write?: {
      [key: string]: unknown;
    };
    spend_fingerprint?: string;
    scope?: "bind_only" | "bind_and_issue";
  };
  pas_ticket_redeem: {
    ticket_id: string;
    write?: {
      [key: string]: unknown;
    };
    spend_fingerprint?: string;
    now: string;
  };
  pas_exclusion: {
    job_id: string;
  };
  pas_bind_check: {
    fuse_id: string;
    job_id: string;
  };
  pas_bind_appendix: {
    job_id: string;
  };
  pas_b_pre_bind: {
    fuse_id: string;
    license_id: string;
    job_id: string;
  };
  pas_mga_authority: {
    fuse_id: string;
    grant_id: string;
    premium: string;
    line: string;
    state: string;
    job_id?: string;
  };
  demo_pas_bind_check: {
    fuse_id?: string;
    job_id?: string;
  };
  demo_pas_mga_authority: {
    fuse_id?: string;
    grant_id?: string;
    premium?: string;
    line?: string;
    state?: string;
    job_id?: string;
  };
  demo_pas_a_pre_bind: {
    fuse_id?: string;
    license_id?: string;
    job_id?: string;
    write?: {
      [key: string]: unknown;
    };
    spend_fingerprint?: string;
    scope?: "bind_only" | "bind_and_issue";
  };
  astl_publish: {
    entity: string;
    act_kinds?: Array<string>;
    preset?: "agentic" | "hiring" | "insurance";
  };
  astl_lookup: {
    entity: string;
    limit?: number;
  };
  astl_verify: {
    manifest_id?: string;
    manifest?: {
      [key: string]: unknown;
    };
  };
  getApiV1AstlLogJson: {
    start?: number;
    limit?: number;
  };
  getApiV1AstlScale: {
    entities?: number;
    versions_per_year?: number;
  };
  absence_witness: {
    act_kind: string;
    entity?: string;
    preset?: "agentic" | "hiring" | "insurance";
    act_kinds?: Array<string>;
  };
  absence_verify: {
    witness: string;
    proof: {
      present: true;
      tree_size: number;
      leaf: {
        key: string;
        index: number;
        hashes: Array<string>;
      };
    } | {
      present: false;
      tree_size: number;
      left?: {
        key: string;
        index: number;
        hashes: Array<string>;
      };
      right?: {
        key: string;
        index: number;
        hashes: Array<string>;
      };
    };
  };
  getApiV1AbsenceScale: {
    declared_surface?: number;
    witnesses_per_act?: number;
  };
  oracle_aggregate: {
    metric: string;
    readings: Array<{
      source_id: "network_a" | "network_b" | "network_c" | "first_party" | "sealed_reading";
      value: string;
      observed_at?: string;
    }>;
  };
  trigger_publish: {
    template_id: "ai_model_change" | "bind_gate_hold" | "incident_sealed" | "custom";
    threshold: {
      metric: string;
      operator: "gte" | "gt" | "lte" | "lt" | "eq";
      value: string;
    };
    obligation?: {
      callable_actions?: Array<string>;
      exposure_ceiling_usd?: string | number;
      fee_bps?: number | null;
    };
    enabled_exposure_usd?: string;
    label?: string;
  };
  trigger_fire: {
    trigger_id: string;
    reading?: string;
    aggregate_id?: string;
  };
  getSignalTriggerFeedJson: {
    start?: number;
    limit?: number;
  };
  getSignalTriggerOracle: Record<string, never>;
  signal_trigger_webhooks_create: {
    url: string;
    trigger_id?: string;
    template_id?: string;
  };
  signal_trigger_webhooks: Record<string, never>;
  getApiV1ClearingNetworkLatestJson: Record<string, never>;
  getApiV1ClearingCatalog: Record<string, never>;
  execute_gate: {
    fuse_id: string;
    action: {
      kind: string;
      [key: string]: unknown;
    };
    exposure_usd?: string;
    hold_above_usd?: string;
    review_requested?: boolean;
    review_id?: string;
  };
  execute_gate_bind: {
    fuse_id: string;
    bind: {
      policy_ref: string;
      kind?: string;
      line?: string;
    };
    exposure_usd?: string;
    hold_above_usd?: string;
    review_requested?: boolean;
    review_id?: string;
  };
  restraint: {
    subject_ref: string;
    act_kind: string;
    decision?: "BLOCK" | "HOLD" | "DENY" | "SILENCE";
    reason: string;
    fuse_id?: string;
    sku?: "restraint" | "restraint_call";
  };
  clear_exposure: {
    month?: string;
  };
  clear_usage: {
    since?: string;
  };
  getApiV1ClearNetwork: {
    month?: string;
  };
  counterfactual_replay: {
    receipt_id: string;
    assume?: {
      state?: "LIVE" | "ARMED" | "DEAD" | "UNSIGNED";
      in_surface?: boolean;
      exposure_usd?: string;
      hold_above_usd?: string | null;
      review_requested?: boolean;
    };
  };
  spoliation_seal: {
    matter_ref: string;
    evidence: Array<{
      name: string;
      sha256: string;
    }>;
    refers_to?: string;
  };
  nap_usage: Record<string, never>;
  pdtr_bind_payment: {
    payment_hash: string;
    action_ref: string;
    rail?: "x402_stablecoin" | "card_network_agent_protocol" | "national_agent_liability";
    receipt_id?: string;
  };
  orn_declare: {
    event_ref: string;
    graph_id?: string;
    loss_usd: string;
    parties: Array<{
      party_id: string;
      contributed_value_usd: string;
    }>;
  };
  orn_sharp: {
    graph_id: string;
    agents_in_graph: number;
    events: number;
    slice_ref?: string;
  };
  relay_enroll: {
    partner_id: string;
    name: string;
  };
  getApiV1RelayNetwork: Record<string, never>;
  getGoByPartnerByTarget: {
    partner: string;
    target: string;
  };
  getWellKnownAgentActionsJson: Record<string, never>;
  postApiV1RequireReceiptDemoPay: {
    [key: string]: unknown;
  };
  depository_attest: {
    event_type: "tokenize";
    asset_id: string;
    attested_custody_units?: number;
    units: number;
    custodian?: string;
  } | {
    event_type: "mint";
    asset_id: string;
    attested_custody_units?: number;
    units: number;
    custody_ref: string;
  } | {
    event_type: "burn";
    asset_id: string;
    attested_custody_units?: number;
    units: number;
  } | {
    event_type: "corporate_action";
    asset_id: string;
    attested_custody_units?: number;
    action: "dividend" | "split" | "governance";
    split_ratio?: number;
  } | {
    event_type: "custody_transfer";
    asset_id: string;
    attested_custody_units?: number;
    to_custodian: string;
    from_custodian?: string;
  };
  getApiV1NapScale: {
    acts_per_month?: number;
    refusal_rate_pct?: number;
  };
  getApiV1PdtrScale: {
    bindings_per_month?: number;
  };
  getApiV1OrnScale: {
    agents_in_graph?: number;
    events_per_month?: number;
    ga_declares_per_month?: number;
  };
  getApiV1RequireReceiptScale: {
    challenges_per_month?: number;
  };
  conformity_generate: {
    category_id: "employment" | "insurance" | "education" | "justice" | "critical_infrastructure" | "companion";
    system: {
      name: string;
      version: string;
      provider: string;
      intended_purpose: string;
    };
    deployer?: string;
    evidence?: {
      [key: string]: unknown;
    };
  };
  conformity_pack: {
    pack_id: string;
  };
  getApiV1FoundryCatalogJson: Record<string, never>;
  foundry_pipeline_run: {
    tenant_id: string;
    act?: {
      kind: string;
    };
    inference_session_id?: string;
    readings?: Array<{
      source_id: "network_a" | "network_b" | "network_c" | "first_party" | "sealed_reading";
      value: string;
      observed_at?: string;
    }>;
    template_id?: "ai_model_change" | "bind_gate_hold" | "incident_sealed";
    threshold?: {
      metric: string;
      operator: "gte" | "gt" | "lte" | "lt" | "eq";
      value: string;
    };
    exposure_usd?: string;
    conformity?: {
      category_id: "employment" | "insurance" | "education" | "justice" | "critical_infrastructure" | "companion";
      system: {
        name: string;
        version: string;
        provider: string;
        intended_purpose: string;
      };
      deployer?: string;
      evidence?: {
        [key: string]: unknown;
      };
    };
    asset?: {
      asset_id: string;
      units: number;
      custodian?: string;
    };
  };
  foundry_projection: {
    tenant_id: string;
  } & {
    runs_per_month?: number;
  };
  inference_chat: {
    model: string;
    messages: Array<{
      role: string;
      [key: string]: unknown;
    }>;
    stream?: false;
    [key: string]: unknown;
  };
  inference_session: {
    session_id: string;
  };
  inference_reasoning_seal: {
    session_id: string;
    reasoning?: string;
    reasoning_sha256?: string;
  };
  getWellKnownMcpJson: Record<string, never>;
  getOpenapiJson: Record<string, never>;
  keys_list: {
    limit?: number;
    starting_after?: string;
  };
  keys_create: {
    name: string;
    role?: "agent" | "operator";
    hop_limit?: number;
    hop_period?: "day" | "week" | "month" | "none";
    expires_at?: string;
    expires_in_seconds?: number;
  };
  keys_get: {
    key_id: string;
  };
  keys_revoke: {
    key_id: string;
  };
  keys_rotate: {
    key_id: string;
  } & {
    grace_seconds?: number;
  };
  keys_limit: {
    key_id: string;
  } & {
    hop_limit: number;
    hop_period?: "day" | "week" | "month" | "none";
  };
  keys_expiry: {
    key_id: string;
  } & {
    expires_at?: string | null;
    expires_in_seconds?: number;
  };
  pas_licenses: Record<string, never>;
  pas_tickets: {
    license_id?: string;
    limit?: number;
  };
  pas_grants: Record<string, never>;
  pas_grants_create: {
    lines: Array<string>;
    states: Array<string>;
    max_premium: string;
    name?: string;
  };
  pas_grants_revoke: {
    grant_id: string;
  };
  signal_trigger_webhooks_deliveries_retry: {
    delivery_id: string;
  };
  operator_checkout: {
    month: string;
    key_id?: string;
  };
  getApiV1Pricing: Record<string, never>;
  getWellKnownX402Json: Record<string, never>;
  getWellKnownX402: Record<string, never>;
  getWellKnownX402BazaarJson: Record<string, never>;
}
