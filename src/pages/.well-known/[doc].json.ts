import type { APIRoute, GetStaticPaths } from 'astro';
import { DISCOVERY_NAMES, discoveryDocument } from '../../catalog/discovery.ts';
import { buildUrls, jsonResponse } from '../../site/endpoints.ts';
import { gateEndpointsSchema } from '../../catalog/schemas.ts';
// Written by the build before the site (scripts/write-openapi.ts), from the operations' declarations.
import endpointsJson from '../../generated/gate-endpoints.json' with { type: 'json' };

const endpoints = gateEndpointsSchema.parse(endpointsJson);

export const prerender = true;

export const getStaticPaths = (() => DISCOVERY_NAMES.map((doc) => ({ params: { doc } }))) satisfies GetStaticPaths;

export const GET: APIRoute = ({ params }) => jsonResponse(discoveryDocument(params.doc!, buildUrls(), endpoints));
