import { catalogRoute } from '../../site/endpoints.ts';

export const prerender = true;
export const GET = catalogRoute('x402_bazaar');
