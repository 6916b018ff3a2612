"""Entry points for `recipes.pretrain --model xlnet` (data and model in two calls).

```python
from keras_pretrain.models.xlnet.xlnet_recipe import xlnet_pretraining_data, build_xlnet_pretrainer

train, info = xlnet_pretraining_data(paths, tokenizer, seq_length=64, batch_size=32, seed=0)
pretrainer = build_xlnet_pretrainer(tokenizer.vocabulary_size(), batch_size=32, seq_length=64)
pretrainer.fit(train.repeat(), steps_per_epoch=..., epochs=...)
```
The dataset batches continue each other row by row (segment recurrence), so
it must not be shuffled and every batch has `batch_size` rows. The metric is
named `accuracy` (the task has one output, `plm`), not `mlm_accuracy`.
"""

from keras_pretrain.data.permutation import xlnet_pretraining_dataset

DEMO_CONFIG = {"num_layers": 2, "num_heads": 2, "hidden_dim": 128, "intermediate_dim": 512, "dropout": 0.1}


def xlnet_pretraining_data(paths, tokenizer, seq_length=64, batch_size=32, seed=0, num_predict=None, **kwargs):
    """`(dataset, info)` of permutation-LM batches from corpus files (see `xlnet_pretraining_dataset`).

    `reuse_len` defaults to `seq_length // 2` and `perm_size` to the same (as
    the original XLNet setup: half of each window is cached for the next).
    """
    kwargs.setdefault("reuse_len", seq_length // 2)
    kwargs.setdefault("perm_size", kwargs["reuse_len"])
    return xlnet_pretraining_dataset(
        paths, tokenizer, seq_length=seq_length, batch_size=batch_size, num_predict=num_predict, seed=seed, **kwargs
    )


def build_xlnet_pretrainer(vocabulary_size, batch_size, seq_length=64, preset=None, mem_len=None, reuse_len=None,
                           **config):
    """An `XLNetPretrainer` with memories for `batch_size`-row batches.

    Args:
        vocabulary_size: int.
        batch_size: int, rows of the training batches (the memory's batch).
        seq_length: int, window length (sets the defaults of `mem_len` = seq_length
            and `reuse_len` = seq_length // 2, matching `xlnet_pretraining_data`).
        preset: a preset name ("xlnet_base_cased", ...) or None for the tiny demo config.
        **config: other `XLNetBackbone` arguments.
    """
    from keras_pretrain.models.xlnet.xlnet_backbone import XLNetBackbone
    from keras_pretrain.models.xlnet.xlnet_pretrainer import XLNetPretrainer

    recurrence = {
        "mem_len": mem_len or seq_length,
        "reuse_len": reuse_len or seq_length // 2,
        "vocabulary_size": vocabulary_size,
    }
    if preset:
        backbone = XLNetBackbone.from_preset(preset, **recurrence, **config)
    else:
        backbone = XLNetBackbone(**{**DEMO_CONFIG, **config, **recurrence})
    return XLNetPretrainer(backbone, memory_batch_size=batch_size)
