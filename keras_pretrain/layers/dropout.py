"""Dropout with cheaper masks (same rates, same seed state as Keras').

`Dropout` is `keras.layers.Dropout` with the masks of `dropout()`: 16-bit
draws from Keras' own generators instead of one float per element, cheaper
on CPU. The per-backend kernels (and their measurements) are in
`keras_pretrain.layers.backend_kernels`.
"""

import keras

from keras_pretrain.layers.backend_kernels import dropout
from keras_pretrain.layers.backend_kernels import keep_threshold  # noqa: F401 (importable here as before)


@keras.saving.register_keras_serializable(package="keras_pretrain")
class Dropout(keras.layers.Dropout):
    """`keras.layers.Dropout` with the masks of `dropout()`.

    Same arguments, config and seed-generator state as the Keras layer (a
    drop-in, checkpoints unchanged); `noise_shape` falls back to Keras.

    Example:
    ```python
    layer = Dropout(0.1)
    y = layer(np.ones((2, 8, 16)), training=True)
    ```
    """

    def call(self, inputs, training=False):
        if not training or self.rate <= 0:
            return inputs
        if self.noise_shape is not None or self.rate >= 1:
            return super().call(inputs, training=training)
        return dropout(inputs, self.rate, self.seed_generator)
