/**
 * Team roles (docs/accounts.md#team-accounts): what each person of an account
 * may do in the dashboard. A viewer reads; an operator also manages keys,
 * fuses, licences, grants, webhooks, alerts and reviews; an owner also
 * manages the account's people and its billing settings (the account's spend
 * cap, deleting the account). The one place these rules live: every API call
 * the dashboard makes for a person asks `roleForCall`, every form it is posted
 * asks `roleForForm` (and a page shows only the forms its reader may post).
 */
export const TEAM_ROLES = ['owner', 'operator', 'viewer'] as const;
export type TeamRole = (typeof TEAM_ROLES)[number];

export const isTeamRole = (v: unknown): v is TeamRole => typeof v === 'string' && (TEAM_ROLES as readonly string[]).includes(v);

const RANK: Record<TeamRole, number> = { viewer: 0, operator: 1, owner: 2 };

/** Whether a person of role `role` may do what needs `need`. */
export const allows = (role: TeamRole, need: TeamRole): boolean => RANK[role] >= RANK[need];

/** One line on each role, as the members page and the invitation show it. */
export const ROLE_MEANING: Record<TeamRole, string> = {
  owner: 'everything, including the account’s people and billing settings',
  operator: 'manages keys, fuses, caps, alerts and reviews; not people or billing',
  viewer: 'reads every page; changes nothing',
};

/** API paths whose writes are the account's billing settings: an owner's. */
const OWNER_PATHS = [/^\/v1\/account\/spend-cap$/];

/** The role an API call made for a person in the dashboard needs: reading is a viewer's, a billing setting an owner's, every other change an operator's. */
export function roleForCall(method: string, path: string): TeamRole {
  if (method === 'GET' || method === 'HEAD') return 'viewer';
  const bare = path.split('?')[0]!;
  return OWNER_PATHS.some((p) => p.test(bare)) ? 'owner' : 'operator';
}

/**
 * The dashboard's form actions beyond a viewer's, by path: the account's people
 * and its billing settings are an owner's; keys, fuses, licences, grants,
 * webhooks, alerts and reviews (and the overview's first key and fuse) an
 * operator's. Every other form is the person's own (sign-in, passkeys,
 * sessions, the test-mode switch, the account they act in): any role's.
 */
const FORM_ROLES: ReadonlyArray<readonly [RegExp, TeamRole]> = [
  [/^\/dashboard\/members\/(invite|invitations\/revoke|role|remove)$/, 'owner'],
  [/^\/dashboard\/account\/(spend-cap|delete)$/, 'owner'],
  [/^\/dashboard\/(start|keys|fuses|licences|grants|webhooks|alerts|reviews)(\/|$)/, 'operator'],
];

/** The role posting a dashboard form to `action` (a path, its query ignored) needs. */
export function roleForForm(action: string): TeamRole {
  const bare = action.split('?')[0]!;
  return FORM_ROLES.find(([p]) => p.test(bare))?.[1] ?? 'viewer';
}
