"""Static pretraining data on Apache Beam (the `[beam]` extra): any runner, the same records as in-process.

One element per input file (shard); each worker builds a shard's records with `shards.ShardBuilder` (the
in-process builder: same seeds, same bytes) and the records go to `WriteToTFRecord`. Counts are Beam
counters in the namespace `create_pretraining_data`, named as `shards.COUNTERS`.

The records are deterministic for a seed and input shard layout (the same bytes whatever the runner or the
number of workers); which output file holds a record, and in which order, is the sink's choice.
"""

import logging
import re

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics.metric import Metrics, MetricsFilter

from keras_pretrain.data.shards import COUNTERS, ShardBuilder
from keras_pretrain.errors import ConfigError

NAMESPACE = "create_pretraining_data"
logger = logging.getLogger(__name__)


class BuildShard(beam.DoFn):
    """(index, path) -> the shard's serialized records; counts as Beam counters."""

    def __init__(self, settings, make_tokenizer):
        self.settings = settings
        self.make_tokenizer = make_tokenizer
        self.builder = None

    def setup(self):
        self.builder = ShardBuilder(self.settings, self.make_tokenizer)

    def process(self, element):
        index, path = element
        result = self.builder.build(index, path, opener=FileSystems.open)
        for name, value in result.counts().items():
            Metrics.counter(NAMESPACE, name).inc(value)
        for issue in result.stats.issues[:10]:
            logger.warning("skipped %s", issue)
        yield from result.records


def output_layout(pattern, num_shards):
    """`WriteToTFRecord`'s (file_path_prefix, shard_name_template, file_name_suffix) for an output pattern
    of `tfrecords.shard_paths` (`{shard}` / `{num_shards}` fields, optionally `:05d`-style widths, or a
    plain prefix), naming the same files.

    Raises:
        ConfigError: a pattern Beam cannot name (fields of another form, S or N letters between them).
    """
    if "{" not in pattern:
        return (pattern, "", "") if num_shards == 1 else (pattern, "-SSSSS-of-NNNNN", "")
    field = re.compile(r"\{(shard|num_shards)(?::0?(\d+)d)?\}")
    matches = list(field.finditer(pattern))
    if not matches or "{" in field.sub("", pattern) or "}" in field.sub("", pattern):
        raise ConfigError(f"Output pattern {pattern!r}: only {{shard}} and {{num_shards}} fields (with an "
                          f"optional :05d-style width) can be written by Beam.")
    first, last = matches[0].start(), matches[-1].end()
    middle = pattern[first:last]
    if re.search("[SN]", field.sub("", middle)):
        raise ConfigError(f"Output pattern {pattern!r}: Beam reads the letters S and N between the fields as "
                          f"shard numbers; rename.")
    template = field.sub(lambda m: ("S" if m.group(1) == "shard" else "N") * int(m.group(2) or 1), middle)
    return pattern[:first], template, pattern[last:]


def static_data(pipeline, files, settings, pattern, num_shards, make_tokenizer):
    """Add the pipeline: shards -> records -> `num_shards` TFRecord files named by `pattern`.

    Args:
        pipeline: a `beam.Pipeline`.
        files: list of input file paths (local, gs:// ... as the runner's workers read them).
        settings: `shards.StaticDataSettings`.
        pattern: output pattern (see `output_layout`).
        num_shards: int; 0 lets the runner choose: each bundle's records are written by the worker that built
            them (no regrouping of the records through the runner's shuffle; as many files as bundles).
        make_tokenizer: builds each worker's WordPiece tokenizer (see `shards.ShardBuilder`); picklable.

    Returns:
        The `WriteToTFRecord` result (the written file names).
    """
    prefix, template, suffix = output_layout(pattern, num_shards)
    return (
        pipeline
        | "Shards" >> beam.Create(list(enumerate(files)))
        | "Spread" >> beam.Reshuffle()
        | "Build" >> beam.ParDo(BuildShard(settings, make_tokenizer))
        | "Write" >> beam.io.WriteToTFRecord(prefix, file_name_suffix=suffix, num_shards=num_shards,
                                              shard_name_template=template)
    )


def counters(result):
    """The run's counts (`shards.COUNTERS`, 0 when never incremented) from a finished pipeline result."""
    counts = dict.fromkeys(COUNTERS, 0)
    for metric in result.metrics().query(MetricsFilter().with_namespace(NAMESPACE))["counters"]:
        value = metric.committed if metric.committed is not None else metric.attempted
        counts[metric.key.metric.name] = counts.get(metric.key.metric.name, 0) + (value or 0)
    return counts


def match_files(paths):
    """Expand input paths and globs with Beam's file systems (local, gs://, hdfs:// ...), in order."""
    files = []
    for path in paths:
        found = sorted(m.path for m in FileSystems.match([path])[0].metadata_list)
        if not found:
            raise FileNotFoundError(f"no input file matches {path!r}")
        files.extend(found)
    return list(dict.fromkeys(files))
