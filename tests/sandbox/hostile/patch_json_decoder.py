# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: WRONG_ANSWER
# Why: replaces json's decoder, which the old in-process judge used to decode a
# JSON-encoded expected string: the expected value is parsed by the parent.

import json

class Yes(json.JSONDecoder):
    def decode(self, s, *args, **kwargs):
        return [9, 9]

json._default_decoder = Yes()
json.loads = lambda *args, **kwargs: [9, 9]

def solve():
    return [9, 9]
