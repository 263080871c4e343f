"""Karpathy's llama2.c files, read with NumPy: the model checkpoint and the tokenizer of ``stories260K``.

The checkpoint (llama2.c's "legacy" export, little-endian) is a header of seven int32, ``dim, hidden_dim, n_layers,
n_heads, n_kv_heads, vocab_size, seq_len``, then float32 arrays in a fixed order, each matrix stored (out, in) as a
PyTorch ``Linear.weight``. A positive ``vocab_size`` means the output layer is the token embedding (tied); a negative
one, that its own matrix follows at the end. The tokenizer file is a uint32, the longest piece in bytes, then one
``(float32 score, int32 length, bytes)`` per piece; encoding follows llama2.c's ``run.c``. Nothing here imports a
framework; ``open_stories260k`` finds the files through the data registry, which checks their sha256.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from attention_course.core.errors import InputError

__all__ = ["BOS", "EOS", "HEADER", "Llama2c", "Tokenizer", "open_stories260k", "read_checkpoint"]

HEADER = ("dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len")
BOS, EOS = 1, 2


@dataclass
class Llama2c:
    """A checkpoint: ``config`` (the header, ``vocab_size`` made positive, ``shared_classifier``, ``head_dim``) and
    ``weights`` by llama2.c's names, NumPy float32: ``token_embedding`` (V, d); per layer, stacked on a first axis
    of ``n_layers``: ``rms_att`` (d,), ``wq`` (d, d), ``wk``/``wv`` (kv·hd, d), ``wo`` (d, d), ``rms_ffn`` (d,),
    ``w1``/``w3`` (h, d), ``w2`` (d, h); ``rms_final`` (d,); ``freq_cis_real``/``freq_cis_imag`` (seq_len, hd/2);
    ``wcls`` (V, d), the token embedding itself when shared."""

    config: dict[str, int]
    weights: dict[str, np.ndarray]

    @property
    def parameters(self) -> int:
        """The number of learned parameters (RoPE's tables are fixed; a shared classifier counts once)."""
        skip = {"freq_cis_real", "freq_cis_imag"} | ({"wcls"} if self.config["shared_classifier"] else set())
        return sum(int(w.size) for name, w in self.weights.items() if name not in skip)


def _shapes(c: dict[str, int]) -> list[tuple[str, tuple[int, ...]]]:
    d, h, n, kv_dim, hd = c["dim"], c["hidden_dim"], c["n_layers"], c["n_kv_heads"] * c["head_dim"], c["head_dim"]
    return [("token_embedding", (c["vocab_size"], d)), ("rms_att", (n, d)), ("wq", (n, d, d)),
            ("wk", (n, kv_dim, d)), ("wv", (n, kv_dim, d)), ("wo", (n, d, d)), ("rms_ffn", (n, d)),
            ("w1", (n, h, d)), ("w2", (n, d, h)), ("w3", (n, h, d)), ("rms_final", (d,)),
            ("freq_cis_real", (c["seq_len"], hd // 2)), ("freq_cis_imag", (c["seq_len"], hd // 2))]


def read_checkpoint(path: str | os.PathLike) -> Llama2c:
    """Read a llama2.c checkpoint; a file of the wrong size or with an impossible header is refused, naming it."""
    path = Path(path)
    raw = path.read_bytes()
    if len(raw) < 28:
        raise InputError(f"{path} has {len(raw)} bytes: a llama2.c checkpoint starts with a 28-byte header")
    header = dict(zip(HEADER, struct.unpack("<7i", raw[:28]), strict=True))
    config = {**header, "vocab_size": abs(header["vocab_size"]), "shared_classifier": int(header["vocab_size"] > 0)}
    sizes = [config[k] for k in HEADER]
    if min(sizes) <= 0 or config["dim"] % config["n_heads"] or config["n_heads"] % config["n_kv_heads"]:
        raise InputError(f"{path}: the header {header} is not a llama2.c model's (sizes must be positive, n_heads "
                         "must divide dim and be a multiple of n_kv_heads)")
    config["head_dim"] = config["dim"] // config["n_heads"]
    shapes = _shapes(config)
    if not config["shared_classifier"]:
        shapes.append(("wcls", (config["vocab_size"], config["dim"])))
    need = sum(int(np.prod(s)) for _, s in shapes)
    floats = np.frombuffer(raw, "<f4", offset=28)
    if floats.size != need:
        raise InputError(f"{path} holds {floats.size:,} float32 after its header; a model of {header} needs "
                         f"{need:,}: the file is truncated or not this format")
    weights, at = {}, 0
    for name, shape in shapes:
        count = int(np.prod(shape))
        weights[name] = floats[at:at + count].reshape(shape).astype(np.float32)
        at += count
    if config["shared_classifier"]:
        weights["wcls"] = weights["token_embedding"]
    return Llama2c(config, weights)


class Tokenizer:
    """llama2.c's byte-pair tokenizer: ``encode`` merges, as ``run.c`` does, the adjacent pair whose merged piece
    has the highest score until no pair is a piece; ``decode`` turns ids back into text."""

    def __init__(self, path: str | os.PathLike, vocab_size: int):
        raw = Path(path).read_bytes()
        self.pieces: list[bytes] = []
        self.scores: list[float] = []
        at = 4
        try:
            for _ in range(vocab_size):
                score, length = struct.unpack_from("<fi", raw, at)
                self.pieces.append(raw[at + 8:at + 8 + length])
                self.scores.append(score)
                at += 8 + length
        except struct.error:
            raise InputError(f"{path} ends after {len(self.pieces)} pieces; a tokenizer of {vocab_size} pieces "
                             "was expected") from None
        if at != len(raw) or any(len(p) == 0 for p in self.pieces[3:]):
            raise InputError(f"{path} is not a llama2.c tokenizer of {vocab_size} pieces ({len(raw) - at} bytes "
                             "left over)")
        self.ids = {piece: i for i, piece in enumerate(self.pieces)}

    def encode(self, text: str, bos: bool = True) -> list[int]:
        """Token ids of ``text``: a space in front (llama2.c's dummy prefix), one piece per UTF-8 character (its
        bytes, ids 3-258, when it is not a piece), then the merges; BOS first when ``bos``."""
        if not isinstance(text, str):
            raise InputError(f"encode takes a str; got {type(text).__name__}")
        tokens = [self.ids[b" "]] if text else []
        for char in text:
            piece = char.encode("utf-8")
            tokens += [self.ids[piece]] if piece in self.ids else [b + 3 for b in piece]
        while True:
            best, where = -float("inf"), -1
            for i in range(len(tokens) - 1):
                merged = self.ids.get(self.pieces[tokens[i]] + self.pieces[tokens[i + 1]])
                if merged is not None and self.scores[merged] > best:
                    best, where = self.scores[merged], i
            if where < 0:
                break
            tokens[where:where + 2] = [self.ids[self.pieces[tokens[where]] + self.pieces[tokens[where + 1]]]]
        return [BOS, *tokens] if bos else tokens

    def _id(self, token) -> int:
        """``token`` checked: an integer in [0, vocab) (Python would read −1 as the last piece)."""
        if isinstance(token, bool) or not isinstance(token, int | np.integer) or not 0 <= token < len(self.pieces):
            raise InputError(f"the tokenizer decodes token ids in [0, {len(self.pieces)}) (its vocabulary size is "
                             f"{len(self.pieces)}); got {token!r}")
        return int(token)

    def piece(self, token: int, previous: int = BOS) -> bytes:
        """The bytes of ``token``: a byte piece ``<0xHH>`` is that byte; after BOS the leading space is dropped."""
        text = self.pieces[self._id(token)]
        if previous == BOS and text.startswith(b" "):
            text = text[1:]
        if text.startswith(b"<0x") and text.endswith(b">") and len(text) == 6:
            return bytes([int(text[3:5], 16)])
        return text

    def decode(self, tokens: list[int]) -> str:
        """The text of ``tokens``, a list of ids in [0, vocab) (BOS and EOS, which have no text, are skipped)."""
        if isinstance(tokens, str | bytes) or not hasattr(tokens, "__iter__"):
            raise InputError(f"decode takes a list of token ids; got {type(tokens).__name__}")
        out, previous = b"", BOS
        for t in map(self._id, tokens):
            if t not in (BOS, EOS):
                out += self.piece(t, previous)
            previous = t
        return out.decode("utf-8", errors="replace")


def open_stories260k() -> tuple[Llama2c, Tokenizer]:
    """``stories260K`` and its tokenizer, found (or downloaded) through the data registry, sha256 checked."""
    from attention_course import data

    files = data.fetch("stories260K")
    model = read_checkpoint(files["stories260K.bin"])
    return model, Tokenizer(files["tok512.bin"], model.config["vocab_size"])
