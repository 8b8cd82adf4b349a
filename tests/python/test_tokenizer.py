"""egca's own tokenizer (egca::tokenizer, no LibTorch) and token offsets from tokenizers."""
import numpy as np
import pytest

import egca
from conftest import QWEN3_TOKENIZER


@pytest.fixture(scope="module")
def qwen3():
    if not QWEN3_TOKENIZER.exists():
        pytest.skip(f"{QWEN3_TOKENIZER} not present")
    return egca.Tokenizer.from_file(str(QWEN3_TOKENIZER))


def test_encode_offsets_tile_the_text(qwen3):
    text = "def f(x):\n    return x + 1  # é\n"
    ids, offsets = qwen3.encode(text)
    assert ids.dtype == np.int32 and offsets.shape == (len(ids), 2)
    raw = text.encode("utf-8")
    assert offsets[0, 0] == 0 and offsets[-1, 1] == len(raw)
    assert np.all(offsets[1:, 0] == offsets[:-1, 1])  # contiguous
    assert qwen3.decode(ids.tolist()) == text
    assert qwen3.vocab_size > 150000


def test_special_tokens_are_text_by_default(qwen3):
    ids, _ = qwen3.encode("<|im_end|>")
    assert len(ids) > 1  # a completion cannot inject a control token
    ids, _ = qwen3.encode("<|im_end|>", parse_special_tokens=True)
    assert len(ids) == 1


def test_tokenizer_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        egca.Tokenizer.from_file(str(tmp_path / "none.json"))
    bad = tmp_path / "tokenizer.json"
    bad.write_text("{}")
    with pytest.raises(Exception, match="tokenizer.json"):
        egca.Tokenizer.from_file(str(bad))


class CharTokenizer:
    """Hugging Face's call interface: one token per character, character offsets."""

    def __call__(self, texts, return_offsets_mapping=False):
        assert return_offsets_mapping
        return {"offset_mapping": [[(i, i + 1) for i in range(len(t))] for t in texts]}


def test_token_offsets(qwen3):
    offs, chars = egca.token_offsets(["ab"], qwen3)
    assert not chars and offs[0].shape[1] == 2
    offs, chars = egca.token_offsets(["aé"], CharTokenizer())
    assert chars and offs[0].tolist() == [[0, 1], [1, 2]]
    with pytest.raises(TypeError, match="tokenizer"):
        egca.token_offsets(["a"], 42)
    with pytest.raises(TypeError, match="offset_mapping"):
        egca.token_offsets(["a"], lambda texts, return_offsets_mapping: {"input_ids": [[1]]})
