export const collections = {};
