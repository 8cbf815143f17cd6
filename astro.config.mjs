// @ts-check
import { defineConfig } from 'astro/config';
import node from '@astrojs/node';

// Every page and document is prerendered at build time; h3 serves dist/client.
// The Node adapter (middleware mode) is there for on-demand pages should one be added.
export default defineConfig({
  output: 'static',
  adapter: node({ mode: 'middleware' }),
  site: process.env.SITE_URL || 'http://localhost:4321',
  trailingSlash: 'ignore',
  build: { format: 'directory' },
});
