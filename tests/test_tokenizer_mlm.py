import torch
from transformers import AutoTokenizer

from vocab_transfer.data.tokenizer import train_unigram_tokenizer
from vocab_transfer.eval.mlm import mask_tokens, mlm_loss, pack_texts
from vocab_transfer.source_model import build_xlmr_mlm, masked_lm_loss


def test_xlmr_layout_and_roundtrip(sw_tokenizer, tmp_path):
    tok = sw_tokenizer
    assert len(tok) == 600
    assert tok.convert_ids_to_tokens([0, 1, 2, 3, 599]) == ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    ids = tok("Mungu aliziumba mbingu", "na nchi").input_ids
    assert ids[0] == 0 and ids[-1] == 2 and ids.count(2) == 3  # <s> A </s></s> B </s>
    tok.save_pretrained(tmp_path)
    again = AutoTokenizer.from_pretrained(tmp_path)
    assert again("Mungu aliziumba mbingu").input_ids == tok("Mungu aliziumba mbingu").input_ids
    assert again.mask_token_id == 599


def test_tokenizer_training_is_deterministic(swahili_verses):
    a = train_unigram_tokenizer(swahili_verses[:500], 300, show_progress=False)
    b = train_unigram_tokenizer(swahili_verses[:500], 300, show_progress=False)
    assert a.get_vocab() == b.get_vocab()


def test_pack_texts(sw_tokenizer, swahili_verses):
    blocks = pack_texts(swahili_verses[:200], sw_tokenizer, 32, max_sequences=10)
    assert blocks.shape == (10, 32)
    assert (blocks[:, 0] == 0).all() and (blocks[:, -1] == 2).all()
    assert not torch.isin(blocks[:, 1:-1], torch.tensor([0, 1, 2, 599])).any()


def test_masking_is_seeded_and_skips_specials():
    ids = torch.randint(5, 500, (64, 32))
    ids[:, 0], ids[:, -1] = 0, 2

    def run(seed):
        return mask_tokens(ids, mask_token_id=599, vocab_size=600, special_ids=[0, 1, 2, 3, 599],
                           generator=torch.Generator().manual_seed(seed))

    (a, la), (b, lb), (c, _) = run(0), run(0), run(1)
    assert torch.equal(a, b) and torch.equal(la, lb) and not torch.equal(a, c)
    chosen = la != -100
    assert not chosen[:, [0, -1]].any()
    assert abs(chosen.float().mean().item() - 0.15 * 30 / 32) < 0.03
    assert abs((a[chosen] == 599).float().mean().item() - 0.8) < 0.06
    assert torch.equal(a[~chosen], ids[~chosen])


def test_masked_only_head_equals_full_loss(sw_tokenizer):
    model = build_xlmr_mlm(sw_tokenizer, hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64,
                           max_position_embeddings=32, seed=0).eval()
    ids = torch.randint(4, 599, (4, 32))
    inputs, labels = mask_tokens(ids, mask_token_id=599, vocab_size=600, special_ids=[0, 1, 2, 3, 599],
                                 generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(masked_lm_loss(model, inputs, labels),
                               model(input_ids=inputs, labels=labels).loss)


def test_untrained_model_loss_near_uniform(sw_tokenizer, swahili_verses):
    model = build_xlmr_mlm(sw_tokenizer, hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64,
                           max_position_embeddings=32, seed=0)
    blocks = pack_texts(swahili_verses[:300], sw_tokenizer, 32, max_sequences=16)
    res = mlm_loss(model, blocks, sw_tokenizer, seed=0)
    assert abs(res["mlm_loss"] - torch.log(torch.tensor(600.0)).item()) < 0.5
    assert res == mlm_loss(model, blocks, sw_tokenizer, seed=0)  # same masks, same loss
