import type { APIRoute, GetStaticPaths } from 'astro';
import { jsonSchemaOf, SCHEMA_IDS } from '../../catalog/json-schema.ts';
import { buildUrls, jsonResponse } from '../../site/endpoints.ts';

export const prerender = true;

export const getStaticPaths = (() => SCHEMA_IDS.map((id) => ({ params: { id } }))) satisfies GetStaticPaths;

export const GET: APIRoute = ({ params }) => jsonResponse(jsonSchemaOf(params.id!, buildUrls()));
