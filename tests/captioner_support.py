"""A tiny captioning model of the real one's architecture (Florence-2), built in the test: random
weights, a tokenizer of a few words, nothing downloaded. Its caption is always CAPTION: the decoder's
output is made constant, WORD its likeliest token and the end of the text the next likeliest, and no
pair of words may repeat, so it says WORD twice and stops."""

import json
from pathlib import Path

WORD = "engraving"
WORDS = ["a", "an", WORD, "of", "man", "horse", "with", "the", "in", "ship", "describe", "paragraph",
         "what", "is", "shown", "image"]
CAPTION = f"{WORD} {WORD}"
SIDE = 64  # pixels the tiny model reads a picture at


def write_tiny_captioner(folder) -> Path:
    """Save the tiny Florence-2 model with its processor to `folder`; returns the folder."""
    import torch
    from transformers import (BartConfig, BartTokenizer, CLIPImageProcessorPil, Florence2Config,
                              Florence2ForConditionalGeneration, Florence2Processor)
    from transformers.models.florence2.configuration_florence2 import Florence2VisionConfig

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = _tokenizer(folder, BartTokenizer)
    vision = Florence2VisionConfig(
        depths=(1, 1), patch_size=(7, 3), patch_stride=(4, 2), patch_padding=(3, 1), patch_prenorm=(False, True),
        embed_dim=(16, 32), num_heads=(2, 2), num_groups=(2, 2), window_size=4, projection_dim=32,
        max_position_embeddings=16)
    text = BartConfig(vocab_size=len(tokenizer), d_model=32, encoder_layers=1, decoder_layers=1,
                      encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64,
                      decoder_ffn_dim=64, max_position_embeddings=128)
    config = Florence2Config(vision_config=vision, text_config=text, image_token_id=tokenizer.image_token_id,
                             architectures=["Florence2ForConditionalGeneration"])
    torch.manual_seed(0)
    model = Florence2ForConditionalGeneration(config).eval()
    _say_one_word(model, tokenizer)
    model.save_pretrained(folder)
    # 8 x 8 patches after the vision tower's strides (4 x 2), and one more for the whole picture.
    image_processor = CLIPImageProcessorPil(size={"height": SIDE, "width": SIDE}, do_center_crop=False,
                                            image_seq_length=(SIDE // 8) ** 2 + 1)
    Florence2Processor(image_processor=image_processor, tokenizer=tokenizer).save_pretrained(folder)
    return folder


def _tokenizer(folder, tokenizer_class):
    specials = ["<s>", "<pad>", "</s>", "<unk>"]
    vocab = {token: index for index, token in enumerate(specials + ["Ġ" + w for w in WORDS] + WORDS + ["Ġ", "."])}
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "merges.txt").write_text("#version: 0.2\n")
    return tokenizer_class(str(folder / "vocab.json"), str(folder / "merges.txt"),
                           extra_special_tokens={"image_token": "<image>"})


def _say_one_word(model, tokenizer):
    import torch

    word = tokenizer.convert_tokens_to_ids("Ġ" + WORD)
    last_norm = model.model.language_model.decoder.layers[-1].final_layer_norm
    with torch.no_grad():
        last_norm.weight.zero_()  # the decoder's output is now the norm's bias: the same at every step
        last_norm.bias.zero_()
        last_norm.bias[0] = 1.0
        scores = model.get_output_embeddings().weight[:, 0]
        scores.zero_()
        scores[word], scores[tokenizer.eos_token_id] = 100.0, 50.0
    model.generation_config.no_repeat_ngram_size = 2
