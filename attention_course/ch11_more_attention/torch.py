"""Chapter 11 in PyTorch: the pointer network (Vinyals et al., 2015), whose attention over the input positions is
its prediction, and the same encoder-decoder with a fixed vocabulary of output positions, the model a pointer
network replaces; convolutional attention (Allamanis et al., 2016), whose scores see a window of neighbouring keys;
hierarchical attention (Yang et al., 2016); multi-source attention (Zoph & Knight, 2016), one decoder attending to
several encoders; the pointer-generator (See et al., 2017), which copies source words through its attention;
monotonic attention (Raffel et al., 2017), which reads its input in order and can decode online. Same
names and signatures as ``keras.py`` beside it.

Shapes: B batch, N input positions, F features per input element, T output steps, h the LSTMs' width.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from attention_course.ch01_sequence_models.torch import masked_softmax
from attention_course.ch04_score_functions.torch import ScoredAttention
from attention_course.ch05_neural_machine_translation.torch import Encoder, encode_padded
from attention_course.ch11_more_attention import validate
from attention_course.core.text import UNK
from attention_course.core.torch import inputs

__all__ = ["PointerAttention", "PointerNetwork", "FixedOutputNetwork", "ConvolutionalAttention", "MarkerReader",
           "ContextAttention", "HierarchicalAttentionNetwork", "FlatAttentionNetwork", "MultiSourceAttention",
           "MultiSourceTranslator", "CopyGate", "PointerGenerator",
           "MonotonicAttention", "Speller"]


class PointerAttention(nn.Module):
    """u_tj = vᵀ tanh(W_1 e_j + W_2 d_t), softmax over the input positions j: the distribution a pointer network
    outputs (``reference.pointer_log_probs``). encoded (B, N, e), decoded (B, T, d), mask (B, N) → log p (B, T, N);
    a hidden position gets log p = −inf (probability 0), so a list with none visible points nowhere: −inf
    everywhere, never NaN."""

    def __init__(self, enc_dim: int, dec_dim: int, units: int):
        super().__init__()
        enc_dim, dec_dim, units = validate.sizes(enc_dim=enc_dim, dec_dim=dec_dim, units=units)
        self.W_1 = nn.Linear(enc_dim, units, bias=False)
        self.W_2 = nn.Linear(dec_dim, units, bias=False)
        self.v = nn.Linear(units, 1, bias=False)

    def forward(self, encoded, decoded, mask=None):
        encoded, decoded = inputs.floats(encoded, "encoded"), inputs.floats(decoded, "decoded", encoded.device)
        validate.pointer_inputs(encoded, decoded, mask)
        mask = None if mask is None else inputs.bool_mask(mask, "mask", encoded.device)
        encoded = inputs.finite(inputs.hide(encoded, mask), "encoded")          # a pad's NaN reaches nothing
        decoded = inputs.finite(decoded, "decoded")
        scores = self.v(torch.tanh(self.W_1(encoded)[:, None] + self.W_2(decoded)[:, :, None])).squeeze(-1)
        if mask is None:                                                         # (B, T, N)
            return torch.log_softmax(scores, dim=-1)
        hidden = ~mask[:, None]                                                  # (B, 1, N)
        log_p = torch.log_softmax(scores.masked_fill(hidden, torch.finfo(scores.dtype).min), dim=-1)
        return log_p.masked_fill(hidden, -torch.inf)                            # log 0: none visible, all −inf


class _EncoderDecoder(nn.Module):
    """What both models share: each input element (F numbers) embedded, an LSTM encoder, an LSTM decoder started
    from the encoder's last state whose input at step t is the element output at step t − 1 (a learned start
    vector at t = 0), and the pointer's attention over the encoder's states. The encoder stops at each list's last
    real element (``mask``), so a list reads the same padded or not."""

    def __init__(self, features: int, hidden: int):
        super().__init__()
        features, hidden = validate.sizes(features=features, hidden=hidden)
        self.features, self.hidden = features, hidden
        self.embed = nn.Linear(features, hidden)
        self.start = nn.Embedding(1, hidden)
        self.encoder = nn.LSTM(hidden, hidden, batch_first=True)
        self.decoder = nn.LSTM(hidden, hidden, batch_first=True)
        self.pointer = PointerAttention(hidden, hidden, hidden)

    def run(self, x, previous, mask=None):
        # x (B, N, F), previous (B, T) the position output at t − 1 (−1 at t = 0) → encoded (B, N, h), decoded
        # (B, T, h) and the pointer's log-probabilities (B, T, N)
        x = inputs.floats(x, "x")
        previous = inputs.tensor(previous, "previous", x.device)
        low, high = (int(previous.min()), int(previous.max())) if previous.numel() else (None, None)
        validate.previous_positions(inputs.dtype_name(previous), tuple(previous.shape), tuple(x.shape), self.features,
                                    low, high)
        validate.pointer_inputs(x, x, mask)                                      # the mask fits the elements
        x = inputs.finite(inputs.hide(x, inputs.bool_mask(mask, "mask", x.device)), "x")   # its real elements
        e = self.embed(x)                                                        # (B, N, h)
        encoded, state = self.encode(e, mask)
        fed = torch.gather(e, 1, previous.clamp(min=0)[..., None].expand(-1, -1, self.hidden))   # (B, T, h)
        fed = torch.where(previous[..., None] < 0, self.start.weight[0], fed)
        decoded, _ = self.decoder(fed, state)                                    # (B, T, h)
        return encoded, decoded, self.pointer(encoded, decoded, mask)


    def encode(self, e, mask=None):
        # e (B, N, h) → states (B, N, h) and the state after each list's last real element (a pad changes nothing)
        if mask is None:
            return self.encoder(e)
        lengths = inputs.bool_mask(mask, "mask", e.device).sum(1)
        validate.some_elements(int(lengths.min()) if len(lengths) else 1)
        packed = nn.utils.rnn.pack_padded_sequence(e, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, state = self.encoder(packed)
        return nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=e.shape[1])[0], state


class PointerNetwork(_EncoderDecoder):
    """Vinyals et al.'s pointer network: at each step the attention over the N input positions is the output, so
    the output "vocabulary" grows with the input. x (B, N, F), previous (B, T), mask (B, N) → log p (B, T, N)."""

    def forward(self, x, previous, mask=None):
        return self.run(x, previous, mask)[2]


class FixedOutputNetwork(_EncoderDecoder):
    """The same encoder-decoder with attention, predicting the output position from a fixed vocabulary of
    ``positions`` classes (a softmax layer over [decoder state; attention context]), as a sequence-to-sequence model
    with attention would: it cannot name a position ≥ ``positions``. x (B, N, F), previous (B, T), mask (B, N)
    → logits (B, T, positions)."""

    def __init__(self, features: int, hidden: int, positions: int):
        super().__init__(features, hidden)
        (self.positions,) = validate.sizes(positions=positions)
        self.out = nn.Linear(2 * hidden, positions)

    def forward(self, x, previous, mask=None):
        encoded, decoded, log_p = self.run(x, previous, mask)
        context = log_p.exp() @ encoded                                          # (B, T, h)
        return self.out(torch.cat([decoded, context], dim=-1))                   # (B, T, positions)


class ConvolutionalAttention(nn.Module):
    """e_j = vᵀ tanh(conv(K)_j + W_q q): the additive score with each key's features computed by a convolution
    over the ``width`` keys centred on it (``reference.convolutional_scores``), so that a score can depend on a
    neighbour ("the word after 'Mr.'"); ``width=1`` is Bahdanau's additive score, each key alone. Then a softmax
    over the keys and the weighted sum of the values. A hidden key is read as zeros, as beyond the ends, so a
    right-padded sequence scores as the same sequence unpadded, and gets no weight; a row with no visible key
    gets no weight at all and a zero context.

    query (B, d_q), keys (B, N, d_k), values (B, N, d_v), mask (B, N) → context (B, d_v) [, weights (B, N)]."""

    def __init__(self, d_query: int, d_key: int, units: int, width: int = 3):
        super().__init__()
        d_query, d_key, units, width = validate.sizes(d_query=d_query, d_key=d_key, units=units, width=width)
        validate.odd_width(width)
        self.conv = nn.Conv1d(d_key, units, width, padding=width // 2)       # zeros beyond the ends
        self.W_q = nn.Linear(d_query, units, bias=False)
        self.v = nn.Linear(units, 1, bias=False)

    def forward(self, query, keys, values, mask=None, return_weights: bool = False):
        query, keys = inputs.floats(query, "query"), inputs.floats(keys, "keys", query.device)
        values = inputs.floats(values, "values", query.device)
        validate.pooled_attention(query, keys, values, mask)
        mask = None if mask is None else inputs.bool_mask(mask, "mask", query.device)
        query = inputs.finite(query, "query")
        keys = inputs.finite(inputs.hide(keys, mask), "keys")                  # pads read as zeros, as the ends
        values = inputs.finite(inputs.hide(values, mask), "values")            # 0 × NaN would still be NaN
        features = self.conv(keys.transpose(1, 2)).transpose(1, 2)              # (B, N, u)
        scores = self.v(torch.tanh(features + self.W_q(query)[:, None])).squeeze(-1)   # (B, N)
        weights = masked_softmax(scores[:, None], mask)[:, 0]                   # (B, N), 0 on pads
        context = (weights[..., None] * values).sum(1)                          # (B, d_v)
        return (context, weights) if return_weights else context


class MarkerReader(nn.Module):
    """Reads one token of a sequence, chosen by where it stands: token embeddings, attention from a learned query
    (``ConvolutionalAttention`` of ``width``), a linear layer to the vocabulary. ids (B, N), mask (B, N) → logits
    (B, vocab) [, weights (B, N)]."""

    def __init__(self, vocab: int, dim: int, width: int = 3):
        super().__init__()
        vocab, dim = validate.sizes(vocab=vocab, dim=dim)
        self.embed = nn.Embedding(vocab, dim)
        self.query = nn.Embedding(1, dim)
        self.attention = ConvolutionalAttention(dim, dim, dim, width)
        self.out = nn.Linear(dim, vocab)

    def forward(self, ids, mask=None, return_weights: bool = False):
        ids = inputs.ids(ids, "ids", self.embed)
        e = self.embed(ids)                                                      # (B, N, d)
        query = self.query.weight.expand(len(ids), -1)                           # (B, d)
        context, weights = self.attention(query, e, e, mask, return_weights=True)
        logits = self.out(context)                                               # (B, vocab)
        return (logits, weights) if return_weights else logits


class ContextAttention(nn.Module):
    """Yang et al.'s attention pooling (2016): u_t = tanh(W h_t + b), weights a = softmax_t(u_tᵀ c) over the real
    steps with a learned context vector c (the question "which of these is informative?"), pooled = Σ_t a_t h_t.
    states (B, T, H), mask (B, T) → pooled (B, H) [, weights (B, T)]; a row with no real step pools to zeros."""

    def __init__(self, hidden: int, units: int):
        super().__init__()
        self.hidden, units = validate.sizes(hidden=hidden, units=units)
        self.W = nn.Linear(hidden, units)
        self.context = nn.Linear(units, 1, bias=False)                      # c, as a layer: u_tᵀ c

    def forward(self, states, mask=None, return_weights: bool = False):
        states = inputs.floats(states, "states")
        validate.sequence_shapes("ContextAttention", states, mask, features=self.hidden)
        mask = None if mask is None else inputs.bool_mask(mask, "mask", states.device)
        states = inputs.finite(inputs.hide(states, mask), "states")       # 0 × a pad's NaN would still be NaN
        scores = self.context(torch.tanh(self.W(states)))[..., 0]          # (B, T)
        weights = masked_softmax(scores[:, None], mask)[:, 0]              # (B, T), 0 on pads
        pooled = (weights[..., None] * states).sum(1)                      # (B, H)
        return (pooled, weights) if return_weights else pooled


class _Words(nn.Module):
    """Embeddings, then a bidirectional GRU over each row of right-padded word ids (B, T) → states (B, T, 2h), zeros
    on pads (a row of pads only gives zeros)."""

    def __init__(self, vocab: int, embed: int, hidden: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, embed)
        self.rnn = nn.GRU(embed, hidden, batch_first=True, bidirectional=True)

    def forward(self, ids, mask):
        lengths = mask.sum(1)
        states, _ = encode_padded(self.rnn, self.embed(ids), lengths.clamp(min=1).cpu())   # (B, T, 2h)
        return states * mask[..., None]


class HierarchicalAttentionNetwork(nn.Module):
    """Yang et al.'s hierarchical attention network: a bidirectional GRU reads each sentence's words and
    ``ContextAttention`` pools them into a sentence vector; a second GRU reads the sentence vectors and a second
    ``ContextAttention`` pools them into the document; a linear layer gives the class scores.
    ids (B, S, W): W words of each of S sentences, right-padded with 0 (and empty sentences last; anything else is
    refused) → logits (B, classes) [, word weights (B, S, W), sentence weights (B, S)]."""

    def __init__(self, vocab: int, classes: int, embed: int = 64, hidden: int = 32):
        super().__init__()
        vocab, classes, embed, hidden = validate.sizes(vocab=vocab, classes=classes, embed=embed, hidden=hidden)
        self.words = _Words(vocab, embed, hidden)
        self.word_attention = ContextAttention(2 * hidden, 2 * hidden)
        self.sentences = nn.GRU(2 * hidden, hidden, batch_first=True, bidirectional=True)
        self.sentence_attention = ContextAttention(2 * hidden, 2 * hidden)
        self.out = nn.Linear(2 * hidden, classes)

    def forward(self, ids, return_weights: bool = False):
        ids = inputs.ids(ids, "ids", self.words.embed, ndim=3)                    # 0 = padding
        b, s, w = ids.shape
        word_mask = ids != 0                                                       # (B, S, W)
        validate.right_padded_documents(word_mask.cpu().numpy())                  # as the packed GRUs read them
        states = self.words(ids.reshape(b * s, w), word_mask.reshape(b * s, w))  # (B·S, W, 2h)
        vectors, word_weights = self.word_attention(states, word_mask.reshape(b * s, w), return_weights=True)
        sentence_mask = word_mask.any(-1)                                          # (B, S)
        lengths = sentence_mask.sum(1).clamp(min=1).cpu()
        states, _ = encode_padded(self.sentences, vectors.reshape(b, s, -1), lengths)   # (B, S, 2h)
        document, sentence_weights = self.sentence_attention(states, sentence_mask, return_weights=True)
        logits = self.out(document)                                                # (B, classes)
        return (logits, word_weights.reshape(b, s, w), sentence_weights) if return_weights else logits


class FlatAttentionNetwork(nn.Module):
    """The same word encoder and ``ContextAttention`` over all the document's words at once, with no sentences:
    the flat model the hierarchy is compared with. ids (B, N) right-padded with 0 (no pad before a word) → logits
    (B, classes) [, weights (B, N)]."""

    def __init__(self, vocab: int, classes: int, embed: int = 64, hidden: int = 32):
        super().__init__()
        vocab, classes, embed, hidden = validate.sizes(vocab=vocab, classes=classes, embed=embed, hidden=hidden)
        self.words = _Words(vocab, embed, hidden)
        self.word_attention = ContextAttention(2 * hidden, 2 * hidden)
        self.out = nn.Linear(2 * hidden, classes)

    def forward(self, ids, return_weights: bool = False):
        ids = inputs.ids(ids, "ids", self.words.embed)
        mask = ids != 0
        validate.right_padded_documents(mask.cpu().numpy())                       # as the packed GRU reads them
        document, weights = self.word_attention(self.words(ids, mask), mask, return_weights=True)
        logits = self.out(document)
        return (logits, weights) if return_weights else logits


class MultiSourceAttention(nn.Module):
    """Zoph and Knight's multi-source attention (2016): one attention per source, each with its own additive score
    and its own softmax over that source's positions (Chapter 4's ``ScoredAttention``), then the query and every
    context joined, h̃_t = tanh(W_c [q_t; c¹_t; …; cᴷ_t] + b_c) (``reference.multi_source``).
    query (B, T, d_q), keys (B, K, S, d_k), mask (B, K, S) → h̃ (B, T, d_q) [, weights (B, K, T, S)]."""

    def __init__(self, d_query: int, d_key: int, units: int, sources: int = 2):
        super().__init__()
        d_query, d_key, units, sources = validate.sizes(d_query=d_query, d_key=d_key, units=units, sources=sources)
        self.attend = nn.ModuleList([ScoredAttention("additive", d_query, d_key, units) for _ in range(sources)])
        self.W_c = nn.Linear(d_query + sources * d_key, d_query)

    def forward(self, query, keys, mask=None, return_weights: bool = False):
        query = inputs.floats(query, "query")
        keys = inputs.floats(keys, "keys", query.device)
        validate.multi_source(query, keys, mask, len(self.attend))
        mask = None if mask is None else inputs.bool_mask(mask, "mask", query.device)
        query = inputs.finite(query, "query")
        keys = inputs.finite(keys if mask is None else keys.masked_fill(~mask[..., None], 0), "keys")   # pads: 0
        contexts, weights = [], []
        for k, attend in enumerate(self.attend):                  # source k: its own score and softmax
            c, w = attend(query, keys[:, k], keys[:, k], None if mask is None else mask[:, k], return_weights=True)
            contexts.append(c)                                    # (B, T, d_k)
            weights.append(w)                                     # (B, T, S)
        h = torch.tanh(self.W_c(torch.cat([query, *contexts], -1)))               # (B, T, d_q)
        return (h, torch.stack(weights, 1)) if return_weights else h


class MultiSourceTranslator(nn.Module):
    """One decoder and ``sources`` encoders (Chapter 5's ``Encoder``, one per source), joined by
    ``MultiSourceAttention``. The decoder's GRU reads the previous tokens from s_0 = tanh(W_s [s¹_0; …; sᴷ_0]) (each
    encoder's start state), and each of its states queries every source (Luong's order, as Zoph and Knight).
    sources (B, K, S) ids right-padded with 0, tgt_in (B, T) → logits (B, T, V) [, weights (B, K, T, S)]."""

    def __init__(self, src_vocab: int, tgt_vocab: int, sources: int = 2, embed: int = 32, hidden: int = 64):
        super().__init__()
        src_vocab, tgt_vocab, sources, embed, hidden = validate.sizes(
            src_vocab=src_vocab, tgt_vocab=tgt_vocab, sources=sources, embed=embed, hidden=hidden)
        self.encoders = nn.ModuleList([Encoder(src_vocab, embed, hidden) for _ in range(sources)])
        self.W_s = nn.Linear(sources * hidden, hidden)
        self.embed = nn.Embedding(tgt_vocab, embed)
        self.rnn = nn.GRU(embed, hidden, batch_first=True)
        self.attention = MultiSourceAttention(hidden, 2 * hidden, hidden, sources)
        self.out = nn.Linear(hidden, tgt_vocab)

    def forward(self, sources, tgt_in, return_weights: bool = False):
        sources = inputs.ids(sources, "sources", self.encoders[0].embed, ndim=3)      # (B, K, S)
        validate.source_count(validate.shape_of(sources), len(self.encoders))
        read = [encoder(sources[:, k], sources[:, k] != 0) for k, encoder in enumerate(self.encoders)]
        states = torch.stack([r[0] for r in read], 1)                              # (B, K, S, 2H)
        mask = torch.stack([r[1] for r in read], 1)                                # (B, K, S)
        s_0 = torch.tanh(self.W_s(torch.cat([r[3] for r in read], -1)))            # (B, H)
        tgt_in = inputs.ids(tgt_in, "tgt_in", self.embed)                          # (B, T)
        validate.same_batch(sources=validate.shape_of(sources), tgt_in=validate.shape_of(tgt_in))
        decoded, _ = self.rnn(self.embed(tgt_in), s_0[None])                       # (B, T, H)
        h, weights = self.attention(decoded, states, mask, return_weights=True)
        logits = self.out(h)                                                       # (B, T, V)
        return (logits, weights) if return_weights else logits


class CopyGate(nn.Module):
    """See et al.'s pointer-generator output (2017): p_gen = σ(w_cᵀ c_t + w_sᵀ s_t + w_xᵀ x_t + b) mixes the
    vocabulary distribution with the attention over the source, P(w) = p_gen P_vocab(w) + (1 − p_gen) Σ_{j: w_j = w}
    a_tj, over the extended vocabulary: the V target words, then ``extra`` ids for source words the vocabulary lacks
    (``reference.pointer_generator``). logits (B, T, V), weights (B, T, S), src_ext (B, S) the source words' ids in
    the extended vocabulary, context (B, T, c), state (B, T, s), embedded (B, T, x) → log P (B, T, V + extra)
    [, p_gen (B, T)]. Each row of ``weights`` must be a distribution (it sums to 1), or P would not be one."""

    def __init__(self, d_context: int, d_state: int, d_input: int, extra: int):
        super().__init__()
        d_context, d_state, d_input, extra = validate.sizes(d_context=d_context, d_state=d_state, d_input=d_input,
                                                            extra=extra)
        self.extra, self.parts = extra, {"d_context": d_context, "d_state": d_state, "d_input": d_input}
        self.w = nn.Linear(d_context + d_state + d_input, 1)

    def forward(self, logits, weights, src_ext, context, state, embedded, return_gate: bool = False):
        logits = inputs.finite(inputs.floats(logits, "logits"), "logits")
        weights = inputs.floats(weights, "weights", logits.device)
        src_ext = inputs.tensor(src_ext, "src_ext", logits.device)
        context, state, embedded = (inputs.floats(x, name, logits.device) for x, name in
                                    ((context, "context"), (state, "state"), (embedded, "embedded")))
        validate.copy_inputs(logits, weights, src_ext, self.extra)
        validate.gate_parts(logits, self.parts, context=context, state=state, embedded=embedded)
        if weights.numel():                                     # each row a distribution over the source
            sums = weights.sum(-1)
            validate.copy_weights(*torch.stack([weights.min(), sums.min(), sums.max()]).tolist())
        size = logits.shape[-1] + self.extra
        validate.extended_ids("src_ext", inputs.dtype_name(src_ext), src_ext.shape, size,
                              *torch.stack(torch.aminmax(src_ext)).tolist())
        p_gen = torch.sigmoid(self.w(torch.cat([context, state, embedded], -1)))       # (B, T, 1)
        vocab = F.pad(torch.softmax(logits, -1), (0, self.extra))                       # (B, T, V + extra)
        copied = weights @ F.one_hot(src_ext, size).to(weights.dtype)                   # Σ_{j: w_j = w} a_tj
        log_p = torch.log((p_gen * vocab + (1 - p_gen) * copied).clamp_min(1e-12))
        return (log_p, p_gen[..., 0]) if return_gate else log_p


class PointerGenerator(nn.Module):
    """An encoder-decoder with Bahdanau's additive attention that can copy: Chapter 5's ``Encoder``, a GRU decoder
    over the previous tokens whose states query the source (Luong's order, all steps at once), an attentional state
    tanh(W_c [s_t; c_t]) and the vocabulary's logits, then ``CopyGate`` (``copy=True``). With ``copy=False`` it is
    the same translator without the gate, the model that can only write its vocabulary.
    src (B, S) ids in the source vocabulary (0 padding), src_ext (B, S) the same words in the extended vocabulary,
    tgt_in (B, T) extended ids (those ≥ ``tgt_vocab``, copied words, are read as ``UNK``) → log P (B, T, V + extra),
    or with ``copy=False`` logits (B, T, V) [, weights (B, T, S), p_gen (B, T) (ones without copying)]."""

    def __init__(self, src_vocab: int, tgt_vocab: int, extra: int, embed: int = 32, hidden: int = 64,
                 copy: bool = True):
        super().__init__()
        src_vocab, tgt_vocab, extra, embed, hidden = validate.sizes(
            src_vocab=src_vocab, tgt_vocab=tgt_vocab, extra=extra, embed=embed, hidden=hidden)
        self.tgt_vocab, self.extra = tgt_vocab, extra
        self.encoder = Encoder(src_vocab, embed, hidden)
        self.embed = nn.Embedding(tgt_vocab, embed)
        self.rnn = nn.GRU(embed, hidden, batch_first=True)
        self.attention = ScoredAttention("additive", hidden, 2 * hidden, hidden)
        self.W_c = nn.Linear(3 * hidden, hidden)
        self.out = nn.Linear(hidden, tgt_vocab)
        self.gate = CopyGate(2 * hidden, hidden, embed, extra) if copy else None

    def forward(self, src, src_ext, tgt_in, return_weights: bool = False):
        src = inputs.ids(src, "src", self.encoder.embed)
        h, mask, _, s_0 = self.encoder(src, src != 0)                                  # (B, S, 2H), …, (B, H)
        tgt_in = inputs.tensor(tgt_in, "tgt_in", h.device)
        validate.extended_ids("tgt_in", inputs.dtype_name(tgt_in), tgt_in.shape, self.tgt_vocab + self.extra,
                              *torch.stack(torch.aminmax(tgt_in)).tolist())
        validate.same_batch(src=validate.shape_of(src), tgt_in=validate.shape_of(tgt_in))
        x = self.embed(torch.where(tgt_in < self.tgt_vocab, tgt_in, UNK))              # (B, T, E)
        s, _ = self.rnn(x, s_0[None])                                                  # (B, T, H)
        c, a = self.attention(s, h, h, mask, return_weights=True)                      # (B, T, 2H), (B, T, S)
        logits = self.out(torch.tanh(self.W_c(torch.cat([s, c], -1))))                # (B, T, V)
        if self.gate is None:
            return (logits, a, torch.ones(a.shape[:2], device=a.device)) if return_weights else logits
        src_ext = inputs.tensor(src_ext, "src_ext", h.device)
        validate.same_shape("src_ext", tuple(src_ext.shape), tuple(src.shape), "src")
        log_p, p_gen = self.gate(logits, a, src_ext, c, s, x, return_gate=True)
        return (log_p, a, p_gen) if return_weights else log_p


class MonotonicAttention(nn.Module):
    """Raffel et al.'s monotonic attention (2017). Each output step i scans the keys from where the step before
    stopped and stops at key j with probability p_ij = σ(vᵀ tanh(W q_i + U k_j + b) + r). Training uses the expected
    alignment, α_ij = p_ij Σ_{k ≤ j} α_{i−1,k} Π_{l=k}^{j−1} (1 − p_il), from α_0 on the first key
    (``reference.monotonic_alignment``), computed one output step at a time as α_i = p_i ∘ (L_i α_{i−1}) with
    L_i[j, k] = Π_{l=k}^{j−1} (1 − p_il): products only, exact when a p_ij is 0 or 1 (Raffel et al.'s parallel form
    divides by Π (1 − p_il), which underflows once some p_il are near 1). Gaussian noise of scale ``noise`` is added
    before the sigmoid so that the p_ij learn to be near 0 or 1; ``hard=True`` decodes as the scan does, one key per
    step or none (``reference.hard_monotonic``). query (B, T, d_q), keys (B, S, d_k), mask (B, S) → context
    (B, T, d_k) [, weights (B, T, S)]; a hidden key gets no weight and is never read."""

    def __init__(self, d_query: int, d_key: int, units: int, noise: float = 1.0, bias: float = -1.0):
        super().__init__()
        d_query, d_key, units = validate.sizes(d_query=d_query, d_key=d_key, units=units)
        self.noise = validate.non_negative("noise", noise)
        self.W = nn.Linear(d_query, units, bias=False)
        self.U = nn.Linear(d_key, units)
        self.v = nn.Linear(units, 1, bias=False)
        self.r = nn.Parameter(torch.tensor(float(bias)))

    def probabilities(self, query, keys, mask=None):
        """p_ij (B, T, S): the probability that step i stops at key j (0 at a hidden key); noisy while training."""
        energy = self.v(torch.tanh(self.W(query)[:, :, None] + self.U(keys)[:, None])).squeeze(-1) + self.r
        if self.training and self.noise:
            energy = energy + self.noise * torch.randn_like(energy)
        p = torch.sigmoid(energy)                                                  # (B, T, S)
        mask = inputs.bool_mask(mask, "mask", p.device)                          # bool, or 0/1 numbers
        return p if mask is None else p.masked_fill(~mask[:, None], 0)

    def forward(self, query, keys, mask=None, hard: bool = False, return_weights: bool = False):
        query = inputs.floats(query, "query")
        keys = inputs.floats(keys, "keys", query.device)
        validate.monotonic_inputs(query, keys, mask)
        mask = None if mask is None else inputs.bool_mask(mask, "mask", query.device)
        query = inputs.finite(query, "query")
        keys = inputs.finite(inputs.hide(keys, mask), "keys")          # pads zeroed: 0 × NaN would still be NaN
        p = self.probabilities(query, keys, mask)
        b, t, s = p.shape
        steps = []
        if hard:                                                # the scan: from where the last step stopped
            start, j = torch.zeros(b, dtype=torch.long, device=p.device), torch.arange(s, device=p.device)
            for i in range(t):
                stop = (p[:, i] >= 0.5) & (j >= start[:, None])                    # (B, S)
                found, first = stop.any(1), stop.int().argmax(1)
                steps.append(F.one_hot(first, s).to(p.dtype) * found[:, None])
                start = torch.where(found, first, torch.full_like(first, s))      # none: the input is used up
        else:                                                   # the expectation: α_i = p_i ∘ (L_i α_{i−1})
            j = torch.arange(s, device=p.device)
            passed = j[:, None] > j[None]                       # (S, S): key k comes before key j
            previous = F.one_hot(torch.zeros(b, dtype=torch.long, device=p.device), s).to(p.dtype)
            for i in range(t):
                kept = F.pad(1 - p[:, i, :-1], (1, 0), value=1.0)                  # (B, S): 1 − p_i,j−1
                # L_i[j, k] = Π_{l=k}^{j−1} (1 − p_il) below the diagonal, 1 on it, 0 above: products only
                L = torch.cumprod(torch.where(passed, kept[:, :, None], 1.0), 1).masked_fill(passed.T, 0)
                previous = p[:, i] * (L @ previous[..., None])[..., 0]             # (B, S)
                steps.append(previous)
        weights = torch.stack(steps, 1)                                            # (B, T, S)
        context = weights @ keys                                                   # (B, T, d_k)
        return (context, weights) if return_weights else context


class Speller(nn.Module):
    """Spelling to sound with attention that can run online: a GRU reads the letters left to right (no backward
    pass, so a prefix's states do not depend on what follows), a GRU decoder from zeros reads the previous phonemes,
    and its states attend over the letters with ``MonotonicAttention`` (``attention="monotonic"``) or Chapter 4's
    additive attention (``"soft"``); logits from tanh(W_c [s_i; c_i]). src (B, S) letter ids right-padded with 0,
    tgt_in (B, T) phoneme ids → logits (B, T, V) [, weights (B, T, S)]; ``hard`` decodes monotonic attention
    online."""

    def __init__(self, src_vocab: int, tgt_vocab: int, embed: int = 32, hidden: int = 64,
                 attention: str = "monotonic"):
        super().__init__()
        src_vocab, tgt_vocab, embed, hidden = validate.sizes(src_vocab=src_vocab, tgt_vocab=tgt_vocab, embed=embed,
                                                             hidden=hidden)
        validate.choice("attention", attention, ("monotonic", "soft"))
        self.kind = attention
        self.letters = nn.Embedding(src_vocab, embed)
        self.encoder = nn.GRU(embed, hidden, batch_first=True)
        self.phonemes = nn.Embedding(tgt_vocab, embed)
        self.decoder = nn.GRU(embed, hidden, batch_first=True)
        self.attention = (MonotonicAttention(hidden, hidden, hidden) if attention == "monotonic"
                          else ScoredAttention("additive", hidden, hidden, hidden))
        self.W_c = nn.Linear(2 * hidden, hidden)
        self.out = nn.Linear(hidden, tgt_vocab)

    def forward(self, src, tgt_in, hard: bool = False, return_weights: bool = False):
        src = inputs.ids(src, "src", self.letters)
        tgt_in = inputs.ids(tgt_in, "tgt_in", self.phonemes)
        validate.same_batch(src=validate.shape_of(src), tgt_in=validate.shape_of(tgt_in))
        mask = src != 0
        h, _ = self.encoder(self.letters(src))                                    # (B, S, H), left to right
        s, _ = self.decoder(self.phonemes(tgt_in))                                 # (B, T, H)
        if self.kind == "monotonic":
            c, a = self.attention(s, h, mask, hard=hard, return_weights=True)
        else:
            c, a = self.attention(s, h, h, mask, return_weights=True)
        logits = self.out(torch.tanh(self.W_c(torch.cat([s, c], -1))))            # (B, T, V)
        return (logits, a) if return_weights else logits
