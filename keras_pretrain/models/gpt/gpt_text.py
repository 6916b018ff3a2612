"""GPT-1's text preprocessor (`Family.preprocessor`): the BPE runs in Python; the start / delimiter / extract
tokens are added at fine-tuning; its serving model takes token ids."""

from keras_pretrain.errors import ConfigError
from keras_pretrain.models.text_preprocessor import TextPreprocessor
from keras_pretrain.models.text_preprocessor import choice_count
from keras_pretrain.models.text_preprocessor import token_ids


class GPTTextPreprocessor(TextPreprocessor):
    """GPT-1: the BPE runs in Python; the start / delimiter / extract tokens are added at fine-tuning."""

    takes_strings = False

    def build_classifier(self, backbone, num_classes, pair, seed, problem_type="single_label_classification"):
        from keras_pretrain.models.gpt.gpt_backbone import expand_vocabulary

        tokens = list(self.packing.special_tokens)
        special = self.tokenizer.add_special_tokens(tokens)
        backbone = expand_vocabulary(backbone, len(tokens), seed=seed)
        task = "entailment" if pair else "classification"
        return self.family.classifier_class(backbone, num_classes=num_classes, task=task,
                                            problem_type=problem_type), special

    def encode(self, columns, seq_length, special):
        from keras_pretrain.models.gpt.gpt_inputs import transform_inputs

        ids = [token_ids(self.tokenizer, column) for column in columns]
        task = "classification" if len(ids) == 1 else "entailment"
        examples = ids[0] if len(ids) == 1 else list(zip(*ids))
        return transform_inputs(task, examples, *special, seq_length)

    def build_multiple_choice(self, backbone, seed):
        """`GPTClassifier(task="multiple_choice")` on `backbone` with the special tokens added (to the tokenizer
        and, randomly initialised, to the embedding), as `build_classifier`."""
        from keras_pretrain.models.gpt.gpt_backbone import expand_vocabulary
        from keras_pretrain.tasks.multiple_choice import for_backbone

        tokens = list(self.packing.special_tokens)
        self.tokenizer.add_special_tokens(tokens)
        return for_backbone(expand_vocabulary(backbone, len(tokens), seed=seed))

    def encode_choices(self, contexts, endings, seq_length, special=None):
        """`start context delimiter ending_c extract` per choice (`transform_inputs`), `[B, C, seq_length]`;
        `special` None: the ids of the special tokens `build_multiple_choice` added."""
        from keras_pretrain.models.gpt.gpt_inputs import transform_inputs

        choice_count(contexts, endings)
        if special is None:
            missing = [t for t in self.packing.special_tokens if t not in self.tokenizer.vocabulary]
            if missing:
                raise ConfigError(f"{self.name}: the tokenizer has no {missing}; build_multiple_choice (or "
                                  "build_classifier) adds them.")
            special = [self.tokenizer.vocabulary[t] for t in self.packing.special_tokens]
        examples = [(context, token_ids(self.tokenizer, row))
                    for context, row in zip(token_ids(self.tokenizer, contexts), endings)]
        return transform_inputs("multiple_choice", examples, *special, seq_length)

    def serving_inputs(self, pair):
        return ("token_ids", "padding_mask")

    def serving_specs(self, tf, classifier, pair):
        return [tf.TensorSpec(classifier.input[n].shape, tf.int32, name=n) for n in self.serving_inputs(pair)]

    def serving_encoder(self, tf, backbone, seq_length):
        return lambda token_ids, padding_mask: {"token_ids": token_ids, "padding_mask": padding_mask}

    def tracked_resources(self):
        return None
