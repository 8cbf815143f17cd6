/**
 * Where the signed-in dashboard lives on the gate service. Relative references
 * (RFC 3986), resolved against the API's own origin, so a 402 names the page
 * without knowing BASE_URL.
 */
export const DASHBOARD_PATH = '/dashboard';
export const DASHBOARD_KEYS_PATH = `${DASHBOARD_PATH}/keys`;
export const DASHBOARD_ACCOUNT_PATH = `${DASHBOARD_PATH}/account`;
