"""The tiny models' tokenizer and network (`real.models.tiny` trains them): a character-level
tokenizer over printable ASCII and a small Qwen2, so vLLM and transformers load a build as an
ordinary HF model. Both are pure functions of their settings: a build's init is seeded here."""

SPECIALS = ["<pad>", "<eos>", "<unk>"]
CHARS = [chr(i) for i in range(32, 127)] + ["\n"]  # printable ASCII: every task's prompts encode


def vocab() -> dict[str, int]:
    return {t: i for i, t in enumerate(SPECIALS + CHARS)}


def make_tokenizer(max_len: int = 1024):
    """Character-level fast tokenizer: one token per character, no BOS, <eos> ends answers."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel(vocab(), unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    tok.decoder = decoders.Fuse()  # concatenate characters back, no spaces between tokens
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<eos>",
        pad_token="<pad>",
        unk_token="<unk>",
        model_max_length=max_len,
    )


def make_model(s):
    """A randomly initialised Qwen2 of the shape in `s` (a real.models.tiny.TinySettings), seeded
    by `s.seed`; head_dim = hidden / heads, which vLLM's CPU attention needs to be >= 32."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    cfg = Qwen2Config(
        vocab_size=len(SPECIALS) + len(CHARS),
        hidden_size=s.hidden,
        intermediate_size=s.intermediate,
        num_hidden_layers=s.layers,
        num_attention_heads=s.heads,
        num_key_value_heads=s.kv_heads,
        head_dim=s.hidden // s.heads,
        max_position_embeddings=s.max_len,
        tie_word_embeddings=False,
        bos_token_id=None,
        eos_token_id=1,
        pad_token_id=0,
        torch_dtype="float32",
    )
    torch.manual_seed(s.seed)
    return Qwen2ForCausalLM(cfg).float()
