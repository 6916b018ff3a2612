"""GPT-1 from OpenAI's original release (`model/params_*.npy`): parity, equality with the HF conversion, errors.

The reference model is `transformers`' OpenAI GPT with the release's arrays
placed by an independent mapping written here after the historical
`load_tf_weights_in_openai_gpt`: array 0 -> `positions_embed`, array 1 ->
`tokens_embed`, then `h{i}/.../w` and `g` -> `.weight`, `b` -> `.bias`, every
array squeezed.
"""

import os
import re
import shutil
import tarfile

import numpy as np
import pytest

from keras_pretrain import convert
from keras_pretrain.errors import CheckpointFormatError
from keras_pretrain.errors import ConfigError
from keras_pretrain.models.gpt import GPTBackbone
from keras_pretrain.models.gpt import GPTCausalLM
from keras_pretrain.models.gpt import GPTTokenizer
from keras_pretrain.models.gpt.gpt_convert import convert_openai
from keras_pretrain.models.gpt.gpt_convert import is_openai_release
from keras_pretrain.models.gpt.gpt_convert import openai_tokenizer
from tests.models.gpt import make_openai_release
from tests.testing import TOLERANCE
from tests.testing import max_abs_diff
from tests.testing import torch_inputs

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

N_LAYER, D, N_CTX, NUM_HEADS = 2, 16, 16, 4
TEXTS = ["The lowest and newer, THE lower!", "Hello   world... it's a test", "Héllo naïve café xyz"]


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    root = tmp_path_factory.mktemp("finetune-transformer-lm")
    params = make_openai_release.build(root, n_layer=N_LAYER, d=D, n_ctx=N_CTX)
    return str(root), params


def hf_reference(cls, params):
    """`cls` (an OpenAIGPT model) holding the release's arrays, placed as the historical HF script does."""
    n_vocab = params["tokens"].shape[0]
    config = transformers.OpenAIGPTConfig(
        vocab_size=n_vocab, n_positions=N_CTX, n_embd=D, n_layer=N_LAYER, n_head=NUM_HEADS
    )
    model = cls(config)
    base = getattr(model, "transformer", model)
    targets = {"positions": base.positions_embed.weight, "tokens": base.tokens_embed.weight}
    for name in params:
        if name in targets:
            continue
        pointer = base
        for scope in name.split("/"):
            numbered = re.fullmatch(r"([A-Za-z]+)(\d+)", scope)
            if numbered:
                pointer = getattr(pointer, numbered[1])[int(numbered[2])]
            else:
                pointer = getattr(pointer, {"w": "weight", "g": "weight", "b": "bias"}.get(scope, scope))
        targets[name] = pointer
    with torch.no_grad():
        for name, target in targets.items():
            array = params[name].squeeze()
            assert tuple(target.shape) == array.shape, name
            target.copy_(torch.from_numpy(array))
    return model.eval()  # dropout off


def inputs(n_vocab):
    rng = np.random.default_rng(0)
    token_ids = rng.integers(1, n_vocab, (2, 12)).astype("int32")
    padding_mask = np.ones((2, 12), "int32")
    padding_mask[0, 8:] = 0
    token_ids[0, 8:] = 0
    return {"token_ids": token_ids, "padding_mask": padding_mask}


def test_parity_with_transformers(release):
    root, params = release
    data = inputs(params["tokens"].shape[0])

    # The folder holding `model/` (as downloaded): hidden states vs OpenAIGPTModel.
    backbone, tokenizer = convert_openai(root, num_heads=NUM_HEADS)
    assert isinstance(backbone, GPTBackbone) and isinstance(tokenizer, GPTTokenizer)
    assert backbone.num_layers == N_LAYER and backbone.max_sequence_length == N_CTX
    assert backbone.activation == "gelu_approximate" and backbone.intermediate_dim == 4 * D
    reference = hf_reference(transformers.OpenAIGPTModel, params)
    with torch.no_grad():
        ref = reference(**torch_inputs(data), output_hidden_states=True)
    ours = backbone(data)
    diffs = [max_abs_diff(a, b.numpy()) for a, b in zip(ours["encoder_outputs"], ref.hidden_states[1:])]
    diffs.append(max_abs_diff(ours["sequence_output"], ref.last_hidden_state.numpy()))

    # The `model/` folder itself, with the tied LM head: logits vs OpenAIGPTLMHeadModel.
    lm, _ = convert_openai(os.path.join(root, "model"), pretrainer=True, num_heads=NUM_HEADS)
    assert isinstance(lm, GPTCausalLM)
    reference = hf_reference(transformers.OpenAIGPTLMHeadModel, params)
    assert reference.lm_head.weight.data_ptr() == reference.transformer.tokens_embed.weight.data_ptr()
    with torch.no_grad():
        logits = reference(**torch_inputs(data)).logits.numpy()
    diffs.append(max_abs_diff(lm(data), logits))
    print("max abs diff (layers..., last hidden state, LM logits)", diffs)
    assert max(diffs) <= TOLERANCE


def test_equals_the_hugging_face_conversion(release, tmp_path):
    root, params = release
    model_folder = os.path.join(root, "model")
    hf_folder = str(tmp_path / "openai-gpt")
    reference = hf_reference(transformers.OpenAIGPTLMHeadModel, params)
    reference.save_pretrained(hf_folder)  # safetensors
    assert os.path.exists(os.path.join(hf_folder, "model.safetensors"))
    # The HF hub's tokenizer files are the release's, renamed.
    shutil.copy(os.path.join(model_folder, "encoder_bpe_40000.json"), os.path.join(hf_folder, "vocab.json"))
    shutil.copy(os.path.join(model_folder, "vocab_40000.bpe"), os.path.join(hf_folder, "merges.txt"))

    from_hf, hf_tokenizer = convert.from_huggingface(hf_folder)
    ours, tokenizer = convert_openai(model_folder, num_heads=NUM_HEADS)
    without_name = lambda config: {k: v for k, v in config.items() if k != "name"}  # noqa: E731
    assert without_name(ours.get_config()) == without_name(from_hf.get_config())
    assert [v.path for v in ours.weights] == [v.path for v in from_hf.weights]
    for a, b, variable in zip(ours.get_weights(), from_hf.get_weights(), ours.weights):
        assert np.array_equal(a, b), variable.path

    transformers_tokenizer = transformers.OpenAIGPTTokenizer.from_pretrained(hf_folder)
    for text in TEXTS:
        ids = tokenizer.tokenize(text)
        assert ids == hf_tokenizer.tokenize(text), text
        assert ids == transformers_tokenizer.encode(text, add_special_tokens=False), text


def test_archive_and_detection(release, tmp_path):
    root, _ = release
    assert is_openai_release(root) and is_openai_release(os.path.join(root, "model"))
    assert not is_openai_release(str(tmp_path))
    archive = str(tmp_path / "finetune-transformer-lm-master.tar.gz")
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(os.path.join(root, "model"), arcname="finetune-transformer-lm-master/model")
    from_archive, tokenizer = convert_openai(archive, num_heads=NUM_HEADS)
    from_folder, _ = convert_openai(root, num_heads=NUM_HEADS)
    assert tokenizer is not None
    for a, b in zip(from_archive.get_weights(), from_folder.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_missing_and_misshaped_arrays_are_all_named(release, tmp_path):
    _, params = release
    arrays = dict(params)
    del arrays[f"h{N_LAYER - 1}/ln_2/b"]  # the last array: the list is one short
    arrays["h0/mlp/c_proj/w"] = arrays["h0/mlp/c_proj/w"].reshape(1, D, 4 * D)  # [1, 4d, d] expected
    model_folder = str(tmp_path / "model")
    make_openai_release.write_params(model_folder, list(arrays.values()))
    with pytest.raises(CheckpointFormatError) as error:
        convert_openai(model_folder, num_heads=NUM_HEADS)
    message = str(error.value)
    print(message)
    assert os.path.join(model_folder, "params_shapes.json") in message
    assert "3 problem(s)" in message  # the short list, then both arrays, at once
    assert f"missing variable 'model/h{N_LAYER - 1}/ln_2/b'" in message
    assert "shape mismatch for 'model/h0/mlp/c_proj/w'" in message


def test_damaged_files_are_named(release, tmp_path):
    root, params = release
    model_folder = str(tmp_path / "model")
    shutil.copytree(os.path.join(root, "model"), model_folder)
    shapes_path = os.path.join(model_folder, "params_shapes.json")

    # Truncated: the download stopped inside params_9.npy.
    path = os.path.join(model_folder, "params_9.npy")
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(data[: len(data) - 40])
    with pytest.raises(CheckpointFormatError, match=r"params_9\.npy: truncated"):
        convert_openai(model_folder, num_heads=NUM_HEADS)

    os.remove(path)
    with pytest.raises(CheckpointFormatError, match=r"params_9\.npy: file not found"):
        convert_openai(model_folder, num_heads=NUM_HEADS)

    # The shapes need more values than the ten files hold.
    make_openai_release.write_params(model_folder, list(params.values()))
    with open(shapes_path) as f:
        text = f.read()
    with open(shapes_path, "w") as f:
        f.write(text.replace(f"[{N_CTX}, {D}]", f"[{N_CTX + 1}, {D}]", 1))
    with pytest.raises(CheckpointFormatError, match=r"params_shapes\.json need"):
        convert_openai(model_folder, num_heads=NUM_HEADS)

    with open(shapes_path, "w") as f:
        f.write('{"not": "a list"}')
    with pytest.raises(CheckpointFormatError, match=re.escape(shapes_path)):
        convert_openai(model_folder, num_heads=NUM_HEADS)

    make_openai_release.write_params(model_folder, list(params.values()))
    with pytest.raises(ConfigError, match="num_heads=12"):
        convert_openai(model_folder)  # the published 12 heads do not divide the tiny width 16


def test_tokenizer_without_unk_uses_id_zero(tmp_path):
    """The original encodes unknown pieces as id 0 (`encoder.get(t, 0)`)."""
    vocab = make_openai_release.vocabulary()
    del vocab["<unk>"]
    vocab = {token: i for i, token in enumerate(sorted(vocab, key=vocab.get))}
    make_openai_release.write_bpe(str(tmp_path), vocab, make_openai_release.MERGES)
    tokenizer = openai_tokenizer(str(tmp_path))
    assert tokenizer.tokenize("the x") == [vocab["the</w>"], 0]
