"""Building preset tables: the configuration every Transformer preset shares, and one preset entry."""


def transformer_config(num_layers, hidden_dim, num_heads, vocabulary_size, activation, layer_norm_epsilon,
                       dropout=0.1, **extra):
    """A backbone config: the published sizes, `intermediate_dim` = 4 x `hidden_dim`, and `extra` keys."""
    return {
        "vocabulary_size": vocabulary_size,
        "num_layers": num_layers,
        "num_heads": num_heads,
        "hidden_dim": hidden_dim,
        "intermediate_dim": 4 * hidden_dim,
        "dropout": dropout,
        "activation": activation,
        "layer_norm_epsilon": layer_norm_epsilon,
        **extra,
    }


def preset(config, description, source, **metadata):
    """One entry of a `backbone_presets` table: the backbone config, what it is, where it comes from, and
    metadata (`params`: the exact published parameter count, `lowercase`, ...)."""
    return {"config": config, "description": description, **metadata, "source": source}
