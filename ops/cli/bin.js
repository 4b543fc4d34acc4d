#!/usr/bin/env node
// The `troupe` executable: loads the TypeScript CLI through tsx, so the published sources are what runs.
import { register } from 'tsx/esm/api';

register();
const { runCli } = await import('./main.ts');
process.exitCode = await runCli(process.argv);
