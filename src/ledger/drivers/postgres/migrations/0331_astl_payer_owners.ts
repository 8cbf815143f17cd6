/** The embedded step, whose statements both engines run as written. */
export { up } from '../../../migrations/0331_astl_payer_owners.ts';
