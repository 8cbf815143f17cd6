// @ts-check
import { defineConfig } from 'astro/config';
import node from '@astrojs/node';
import { satteri } from '@astrojs/markdown-satteri';
import { docsHtml } from './src/site/docs.ts';
import { BUILD_ORIGINS } from './src/urls.ts';

// Every page and document is prerendered at build time; h3 serves dist/client.
// The Node adapter (middleware mode) is there for on-demand pages should one be added.
export default defineConfig({
  output: 'static',
  adapter: node({ mode: 'middleware' }),
  // Built for a placeholder origin; the server substitutes SITE_URL when it loads the build (src/urls.ts).
  site: BUILD_ORIGINS.site,
  trailingSlash: 'ignore',
  build: { format: 'directory' },
  // docs/*.md link to each other as files (for GitHub); on the site they link to /docs/<name>.
  // Code blocks keep the site's own colours (a highlighter's theme failed contrast checks).
  markdown: { processor: satteri({ hastPlugins: [docsHtml] }), syntaxHighlight: false },
});
