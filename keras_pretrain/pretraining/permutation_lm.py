"""Permutation-LM pretraining jobs (XLNet): WordPiece, a contiguous stream, two-stream attention, memories.

```python
from keras_pretrain.pretraining.permutation_lm import xlnet_pretraining_data, build_xlnet_pretrainer

train, info = xlnet_pretraining_data(paths, tokenizer, seq_length=64, batch_size=32, seed=0)
pretrainer = build_xlnet_pretrainer(tokenizer.vocabulary_size(), batch_size=32, seq_length=64)
pretrainer.fit(train.repeat(), steps_per_epoch=..., epochs=...)
```
The dataset batches continue each other row by row (segment recurrence), so
it must not be shuffled and every batch has `batch_size` rows. The metric is
named `accuracy` (the task has one output, `plm`), not `mlm_accuracy`.
"""

from keras_pretrain import families
from keras_pretrain.pretraining import PretrainingJob
from keras_pretrain.pretraining import PretrainingSettings
from keras_pretrain.pretraining import build_backbone
from keras_pretrain.pretraining import rebuild


def xlnet_pretraining_data(paths, tokenizer, seq_length=64, batch_size=32, seed=0, num_predict=None, **kwargs):
    """`(dataset, info)` of permutation-LM batches from corpus files (see `xlnet_pretraining_dataset`).

    `reuse_len` defaults to `seq_length // 2` and `perm_size` to the same (as
    the original XLNet setup: half of each window is cached for the next).
    """
    from keras_pretrain.data.permutation import xlnet_pretraining_dataset

    kwargs.setdefault("reuse_len", seq_length // 2)
    kwargs.setdefault("perm_size", kwargs["reuse_len"])
    return xlnet_pretraining_dataset(
        paths, tokenizer, seq_length=seq_length, batch_size=batch_size, num_predict=num_predict, seed=seed, **kwargs
    )


def build_xlnet_pretrainer(vocabulary_size, batch_size, seq_length=64, preset=None, mem_len=None, reuse_len=None,
                           dropout=None, **config):
    """An `XLNetPretrainer` with memories for `batch_size`-row batches.

    Args:
        vocabulary_size: int.
        batch_size: int, rows of the training batches (the memory's batch).
        seq_length: int, window length (sets the defaults of `mem_len` = seq_length
            and `reuse_len` = seq_length // 2, matching `xlnet_pretraining_data`).
        preset: a preset name ("xlnet_base_cased", ...) or None for the tiny demo config.
        dropout: None for the family's (0.1).
        **config: other `XLNetBackbone` arguments.
    """
    family = families.get("xlnet")
    settings = PretrainingSettings(preset=preset, seq_length=seq_length, dropout=dropout)
    recurrence = {"mem_len": mem_len or seq_length, "reuse_len": reuse_len or seq_length // 2}
    backbone = build_backbone(family.name, vocabulary_size, settings, **recurrence, **config)
    return family.pretrainer_class(backbone, memory_batch_size=batch_size)


def initial_xlnet_pretrainer(model, batch_size, seq_length):
    """The `--init` release as an `XLNetPretrainer` with the training memories (`mem_len` = seq_length,
    `reuse_len` = seq_length // 2, as `build_xlnet_pretrainer`) and its `lm_loss` bias when it has one."""
    backbone = getattr(model, "backbone", model)
    backbone = rebuild(backbone, mem_len=seq_length, reuse_len=seq_length // 2)
    pretrainer = families.get("xlnet").pretrainer_class(backbone, memory_batch_size=batch_size)
    if hasattr(model, "lm_head"):
        pretrainer.lm_head.bias.assign(model.lm_head.bias)
    return pretrainer


def build_job(family, paths, settings):
    """Tokenizer, permutation-LM batches (training, and held-out batches drawn with another seed) and task."""
    from keras_pretrain.pretraining.masked_lm import initial_or_wordpiece

    family = families.get(family)
    initial, tokenizer = initial_or_wordpiece(family, paths, settings)
    data = dict(seq_length=settings.seq_length, batch_size=settings.batch_size)
    train, _ = xlnet_pretraining_data(paths, tokenizer, seed=settings.seed, **data)
    held_out, _ = xlnet_pretraining_data(paths, tokenizer, seed=settings.seed + 1, **data)
    if initial is None:
        model = build_xlnet_pretrainer(tokenizer.vocabulary_size(), preset=settings.preset,
                                       dropout=settings.dropout, **data)
    else:
        model = initial_xlnet_pretrainer(initial, **data)
    return PretrainingJob(family=family.name, tokenizer=tokenizer, train=train,
                          held_out=held_out.take(settings.eval_batches).cache(), model=model, metric="accuracy",
                          objective=family.objective)
