#!/usr/bin/env node
// Runs the CLI on Node 24 (type stripping); see package.json "engines".
import { runCli } from '../src/cli.ts';

process.exitCode = await runCli(process.argv.slice(2));
