/**
 * The audit log's actions (docs/accounts.md#audit-log): what an entry may say
 * was done. A route's declaration names its own (api/route-doc.ts AuditDoc);
 * the dashboard's own changes (people, passwords, reviews) name theirs.
 */
export const AUDIT_ACTIONS = [
  'key.created',
  'key.rotated',
  'key.revoked',
  'key.hop_limit_changed',
  'key.surface_changed',
  'key.spend_cap_changed',
  'key.expiry_changed',
  'account.spend_cap_changed',
  'fuse.created',
  'fuse.blown',
  'fuse.charged',
  'licence.blown',
  'licence.charged',
  'grant.created',
  'grant.revoked',
  'webhook.created',
  'webhook.delivery_retried',
  'alert.created',
  'alert.test_sent',
  'alert.removed',
  'review.approved',
  'review.denied',
  'member.invited',
  'member.invitation_revoked',
  'member.joined',
  'member.role_changed',
  'member.removed',
  'person.email_changed',
  'person.password_changed',
  'person.password_reset',
  'dashboard.call',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];
