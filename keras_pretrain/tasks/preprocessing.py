"""Old path of the families' text preprocessors: `keras_pretrain.models.text_preprocessor` (the GPT-1 and ELMo
ones in their family folders)."""

from keras_pretrain.models.text_preprocessor import BPE_SPACES  # noqa: F401
from keras_pretrain.models.text_preprocessor import SENTENCEPIECE_SPACE  # noqa: F401
from keras_pretrain.models.text_preprocessor import SQUAD_WHITESPACE  # noqa: F401
from keras_pretrain.models.text_preprocessor import TextPreprocessor  # noqa: F401
from keras_pretrain.models.text_preprocessor import __getattr__  # noqa: F401 (GPT-1's and ELMo's, moved)
from keras_pretrain.models.text_preprocessor import choice_count  # noqa: F401
from keras_pretrain.models.text_preprocessor import special_id  # noqa: F401
from keras_pretrain.models.text_preprocessor import token_ids  # noqa: F401
from keras_pretrain.models.text_preprocessor import word_starts  # noqa: F401
