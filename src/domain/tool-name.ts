/**
 * The name of an agent's tool (an MCP tool, an SDK function tool) as a receipt
 * names it: the MCP tool-name format (SEP-986: 1 to 128 ASCII letters, digits,
 * "_", "-" and "."). A name of that form is an identifier, as an act kind is, so
 * the public log shows it in the clear (docs/public-log.md); the gate refuses
 * any other, and the proxy and the guards then leave it out of the hop.
 * No zod here: the typed client's guards ship this module.
 */
export const TOOL_NAME = /^[A-Za-z0-9._-]{1,128}$/;

export const TOOL_NAME_MESSAGE = 'an MCP tool name: 1 to 128 letters, digits, "_", "-" or "."';

export const isToolName = (name: string): boolean => TOOL_NAME.test(name);
