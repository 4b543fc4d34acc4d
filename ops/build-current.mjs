#!/usr/bin/env node
// Rebuilds build/ when a source is newer than the last build (benches call it before timing the compiled node).
import { ensureBuildCurrent } from './build-state.mjs';

if (!ensureBuildCurrent()) process.exit(1);
