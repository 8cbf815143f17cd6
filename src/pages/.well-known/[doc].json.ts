import type { APIRoute, GetStaticPaths } from 'astro';
import { DISCOVERY_NAMES, discoveryDocument } from '../../catalog/discovery.ts';
import { buildUrls, jsonResponse } from '../../site/endpoints.ts';

export const prerender = true;

export const getStaticPaths = (() => DISCOVERY_NAMES.map((doc) => ({ params: { doc } }))) satisfies GetStaticPaths;

export const GET: APIRoute = ({ params }) => jsonResponse(discoveryDocument(params.doc!, buildUrls()));
