"""Published ELMo configurations (exact shapes; metadata only, no weights).

The AllenNLP options files `elmo_2x4096_512_2048cnn_2xhighway` (original and
"5.5B"), `elmo_2x2048_256_2048cnn_1xhighway` (medium) and
`elmo_2x1024_128_2048cnn_1xhighway` (small): all three use the same char CNN
(16-dim embedding of 262 ids, filters (1,32) ... (7,1024) = 2048 channels,
relu), cell clip 3, projection clip 3 and residual connections.

`params` counts the backbone only: character embedding (262 x 16), char CNN,
highway, token projection and the forward and backward LSTMP stacks. It does
NOT count the word softmax of the pretraining task (793,471 words x 513 =
407M more for the 1B Word Benchmark vocabulary): the published 93.6M / 28.0M
/ 13.6M (allennlp.org/elmo) are these backbone counts.

Note: the reference sheet says "small 14.6M"; the published table and the
small options file give 13.6M (13,593,312 exactly), which is what we check.
"""

from keras_pretrain.models.elmo.elmo_backbone import ORIGINAL_FILTERS
from keras_pretrain.models.presets import preset


def _elmo(lstm_dim, hidden_dim, num_highway):
    return {
        "num_layers": 2,
        "hidden_dim": hidden_dim,
        "lstm_dim": lstm_dim,
        "filters": [list(f) for f in ORIGINAL_FILTERS],
        "num_highway": num_highway,
        "char_embedding_dim": 16,
        "num_characters": 262,
        "max_characters": 50,
        "activation": "relu",
        "cell_clip": 3.0,
        "proj_clip": 3.0,
        "use_residual": True,
        "dropout": 0.1,
    }


_ALLENNLP = "https://allennlp.org/elmo"

backbone_presets = {
    "elmo_original": preset(
        _elmo(4096, 512, 2), "ELMo original: 2x4096 LSTMP projected to 512, 2 highway layers.", _ALLENNLP,
        params=93_600_864,
    ),
    "elmo_medium": preset(
        _elmo(2048, 256, 1), "ELMo medium: 2x2048 LSTMP projected to 256, 1 highway layer.", _ALLENNLP,
        params=28_027_744,
    ),
    "elmo_small": preset(
        _elmo(1024, 128, 1), "ELMo small: 2x1024 LSTMP projected to 128, 1 highway layer.", _ALLENNLP,
        params=13_593_312,
    ),
}
