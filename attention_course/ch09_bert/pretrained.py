"""Pretrained BERT weights for Chapter 9, whatever the framework: where the files are, their checksums, and the
mapping from the names of Hugging Face's ``BertModel`` to the course's ``Bert`` (``ac.torch`` or ``ac.keras``).

The model is ``sentence-transformers/all-MiniLM-L6-v2``, a 6-layer BERT encoder. It is looked for in
``$COURSE_MODEL_DIR/all-MiniLM-L6-v2`` (CI and ``make`` point that at ``../shared/models`` when it exists), then
downloaded from the Hugging Face hub by name when ``huggingface_hub`` is installed and the network answers.
Weights are read with ``safetensors`` as NumPy arrays; nothing here imports a framework.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from attention_course.core.errors import (
    InputError,
    ModelUnavailableError,
)
from attention_course.data.download import ChecksumError, sha256sum

__all__ = ["MINILM", "MODEL_DIR_VAR", "ModelUnavailableError", "PretrainedBert", "bert_parameters",
           "from_parameters", "locate", "read_bert", "tokenizer", "write_bert"]

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_DIR_VAR = "COURSE_MODEL_DIR"
#: The files a BERT folder needs, and the sha256 of MiniLM's (``shared/models/SOURCES.md``).
FILES = {"config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
         "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
         "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"}


@dataclass
class PretrainedBert:
    """A BERT read from a folder: its ``config.json`` and its weights by Hugging Face name (NumPy arrays)."""

    folder: Path | None                  # None for weights exported from a model in memory
    config: dict[str, Any]
    weights: dict[str, np.ndarray]

    @property
    def sizes(self) -> dict[str, int]:
        """The arguments of the course's ``Bert`` for this model."""
        c = self.config
        return {"vocab": c["vocab_size"], "d_model": c["hidden_size"], "heads": c["num_attention_heads"],
                "layers": c["num_hidden_layers"], "d_ff": c["intermediate_size"],
                "max_len": c["max_position_embeddings"], "segments": c["type_vocab_size"]}


def locate(name: str = MINILM) -> Path:
    """The folder of model ``name`` (``owner/model``): ``$COURSE_MODEL_DIR/<model>`` if it holds the files, else a
    download from the Hugging Face hub. Raises :class:`ModelUnavailableError` saying where to put the files."""
    short = name.split("/")[-1]
    root = os.environ.get(MODEL_DIR_VAR)
    if root and all((Path(root) / short / f).is_file() for f in FILES):
        return Path(root) / short
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(name, allow_patterns=list(FILES)))
    except Exception as error:                         # no huggingface_hub, no network, no such model
        where = f"${MODEL_DIR_VAR}/{short}" + (f" (= {Path(root) / short})" if root else f" (set {MODEL_DIR_VAR})")
        raise ModelUnavailableError(
            f"the pretrained model {name} is not available: put its files ({', '.join(FILES)}) in {where}, or go "
            f"online with huggingface_hub installed to download it ({type(error).__name__}: {error})") from None


def read_bert(folder: str | os.PathLike, *, verify: bool = True) -> PretrainedBert:
    """Read ``config.json`` and ``model.safetensors`` from ``folder``. With ``verify``, a file whose sha256 differs
    from MiniLM's is refused when the config says it is MiniLM (a checksum error names the file and both hashes)."""
    from safetensors.numpy import load_file

    folder = Path(folder)
    missing = [f for f in ("config.json", "model.safetensors") if not (folder / f).is_file()]
    if missing:
        raise ModelUnavailableError(f"{folder} has no {' or '.join(missing)}: it is not a BERT folder")
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ModelUnavailableError(f"{folder / 'config.json'} is not valid JSON ({error}): the file is damaged or "
                                    "not a model's config; download the model again") from None
    if not isinstance(config, dict):
        raise ModelUnavailableError(f"{folder / 'config.json'} holds a {type(config).__name__}, not a model's "
                                    "settings (a JSON object)")
    if verify and config.get("_name_or_path") == "nreimers/MiniLM-L6-H384-uncased":
        for file in ("config.json", "model.safetensors"):
            got = sha256sum(folder / file)
            if got != FILES[file]:
                raise ChecksumError(f"{folder / file}: sha256 {got}, expected {FILES[file]}")
    if config.get("model_type", "bert") != "bert" or config.get("hidden_act", "gelu") != "gelu":
        raise ModelUnavailableError(f"{folder} holds a {config.get('model_type')} model with activation "
                                    f"{config.get('hidden_act')}; the course's Bert is BERT with GELU")
    try:
        saved = load_file(folder / "model.safetensors")
    except Exception as error:                          # safetensors' own errors: truncated, not safetensors
        raise ModelUnavailableError(f"{folder / 'model.safetensors'} cannot be read as safetensors "
                                    f"({type(error).__name__}: {error}): the file is damaged or incomplete; "
                                    "download the model again") from None
    missing = [k for k in ("num_hidden_layers", "num_attention_heads", "hidden_size") if k not in config]
    if missing:
        raise ModelUnavailableError(f"{folder / 'config.json'} lacks {', '.join(missing)}: not a BERT config")
    weights = {k.removeprefix("bert."): v for k, v in saved.items()}
    return PretrainedBert(folder, config, weights)


def tokenizer(folder: str | os.PathLike):
    """The model's WordPiece tokenizer (``tokenizers``), which adds [CLS] and [SEP] and lower-cases as it did."""
    from tokenizers import Tokenizer

    path = Path(folder) / "tokenizer.json"
    if not path.is_file():
        raise ModelUnavailableError(f"{path} is missing: the model's folder needs its tokenizer.json")
    try:
        return Tokenizer.from_file(str(path))
    except Exception as error:                          # tokenizers raises a bare Exception on a bad file
        raise ModelUnavailableError(f"{path} cannot be read as a tokenizer ({type(error).__name__}: "
                                    f"{str(error)[:200]}): the file is damaged or not a tokenizers file") from None


#: The course's name of each weight of an encoder layer → the ``transformers`` name after ``encoder.layer.i.``
LAYER_NAMES = {"W_q": "attention.self.query", "W_k": "attention.self.key", "W_v": "attention.self.value",
               "W_o": "attention.output.dense", "norm_1": "attention.output.LayerNorm", "W_1": "intermediate.dense",
               "W_2": "output.dense", "norm_2": "output.LayerNorm"}


#: The masked-LM head's weights (``MaskedLM``): the course's name → the ``transformers`` name; the output layer is
#: the token embeddings (tied), plus a bias.
HEAD_NAMES = {"transform": "cls.predictions.transform.dense", "norm": "cls.predictions.transform.LayerNorm"}
HEAD_BIAS = "cls.predictions.bias"


def bert_parameters(model: PretrainedBert) -> dict[str, Any]:
    """The weights in the course's layout, PyTorch's orientation (a linear layer's weight is (out, in)):
    ``{"embeddings": {...}, "layers": [{"W_q": (weight, bias), ..., "norm_2": (gamma, beta)}, ...]}``, and
    ``"head": {"transform": …, "norm": …, "bias": …}`` when the weights hold a masked-LM head."""
    w = model.weights

    def pair(prefix):                                   # a linear layer's (weight, bias), a LayerNorm's (γ, β)
        return w[prefix + ".weight"], w[prefix + ".bias"]

    embeddings = {"tokens": w["embeddings.word_embeddings.weight"],
                  "positions": w["embeddings.position_embeddings.weight"],
                  "segments": w["embeddings.token_type_embeddings.weight"],
                  "norm": pair("embeddings.LayerNorm")}
    layers = [{ours: pair(f"encoder.layer.{i}.{theirs}") for ours, theirs in LAYER_NAMES.items()}
              for i in range(model.config["num_hidden_layers"])]
    params = {"embeddings": embeddings, "layers": layers}
    if HEAD_BIAS in w:                                  # a masked-LM head (MaskedLM); MiniLM has none
        params["head"] = {ours: pair(theirs) for ours, theirs in HEAD_NAMES.items()} | {"bias": w[HEAD_BIAS]}
    return params


def from_parameters(params: dict[str, Any], heads: int) -> PretrainedBert:
    """The inverse of ``bert_parameters``: weights in the course's layout (PyTorch's orientation), with or without
    a ``"head"`` → a ``PretrainedBert`` under ``transformers``' names, with the config that describes it
    (``export_bert``)."""
    e = params["embeddings"]
    w = {"embeddings.word_embeddings.weight": e["tokens"], "embeddings.position_embeddings.weight": e["positions"],
         "embeddings.token_type_embeddings.weight": e["segments"], "embeddings.LayerNorm.weight": e["norm"][0],
         "embeddings.LayerNorm.bias": e["norm"][1]}
    for i, layer in enumerate(params["layers"]):
        for ours, theirs in LAYER_NAMES.items():
            w[f"encoder.layer.{i}.{theirs}.weight"], w[f"encoder.layer.{i}.{theirs}.bias"] = layer[ours]
    if "head" in params:
        h = params["head"]
        for ours, theirs in HEAD_NAMES.items():
            w[theirs + ".weight"], w[theirs + ".bias"] = h[ours]
        w[HEAD_BIAS] = h["bias"]
    vocab, d_model = e["tokens"].shape
    config = {"model_type": "bert", "hidden_act": "gelu", "vocab_size": int(vocab), "hidden_size": int(d_model),
              "num_attention_heads": int(heads), "num_hidden_layers": len(params["layers"]),
              "intermediate_size": int(params["layers"][0]["W_1"][0].shape[0]) if params["layers"] else 4 * d_model,
              "max_position_embeddings": int(e["positions"].shape[0]), "type_vocab_size": int(e["segments"].shape[0]),
              "layer_norm_eps": 1e-12, "architectures": ["BertForMaskedLM" if "head" in params else "BertModel"]}
    return PretrainedBert(None, config, {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in w.items()})


def write_bert(folder: str | os.PathLike, model: PretrainedBert, tokenizer=None) -> Path:
    """Save ``model`` as ``transformers`` saves a ``BertModel``, or a ``BertForMaskedLM`` when it has the head
    (``config.json``, ``model.safetensors``), with the ``tokenizers`` tokenizer as ``tokenizer.json``. The folder is
    written beside its place and renamed into it: an interrupted save leaves no half-written model. A folder
    already there is never emptied: it is renamed to ``<folder>.replaced-<date>-<time>`` (printed), with every
    file in it. The current folder, or one above it, is refused. Returns ``folder``."""
    import shutil
    import tempfile

    from safetensors.numpy import save_file

    from attention_course.core.files import replace_folder

    folder = Path(folder)
    if Path.cwd().resolve().is_relative_to(folder.resolve()):
        raise InputError(f"refusing to write a model into {folder}: it is the current folder or holds it, "
                               "and its files would be moved away; name a new folder, e.g. write_bert('small-bert', …)")
    if folder.exists() and not folder.is_dir():
        raise InputError(f"{folder} is a file, not a folder; name a folder for the model's files")
    folder.parent.mkdir(parents=True, exist_ok=True)
    part = Path(tempfile.mkdtemp(prefix=folder.name + ".part-", dir=folder.parent))
    try:
        (part / "config.json").write_text(json.dumps(model.config, indent=1) + "\n")
        head = HEAD_BIAS in model.weights              # BertForMaskedLM's layout: the encoder under "bert."
        save_file({k if k.startswith("cls.") or not head else "bert." + k: v for k, v in model.weights.items()},
                  str(part / "model.safetensors"))
        if tokenizer is not None:
            tokenizer.save(str(part / "tokenizer.json"))
        part.chmod(0o755)                              # mkdtemp makes it private; a saved model is not
        for file in part.iterdir():
            file.chmod(0o644)
        replaced = replace_folder(part, folder)
        if replaced is not None:
            print(f"{folder} already held files: moved them, untouched, to {replaced}")
    finally:
        shutil.rmtree(part, ignore_errors=True)
    return folder
