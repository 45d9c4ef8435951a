"""The PyTorch models the partitioner is measured on (python/bench/measure.py) and tested with
(python/tests): small CPU sizes that train in seconds. Each factory returns (model, inputs,
blocks), `blocks` the submodules torch.utils.checkpoint wraps one by one."""

import torch
from torch import nn
import torchvision


class AttentionStep(nn.Module):
    """One decoder step: LSTM cell, MLP (Bahdanau) attention over the encoder states, logits."""

    def __init__(self, vocab, hidden):
        super().__init__()
        self.cell = nn.LSTMCell(2 * hidden, hidden)
        self.query = nn.Linear(hidden, hidden, bias=False)
        self.score = nn.Linear(hidden, 1, bias=False)
        self.out = nn.Linear(2 * hidden, vocab)

    def forward(self, x, context, h, c, keys, memory):
        h, c = self.cell(torch.cat([x, context], dim=1), (h, c))
        energy = torch.tanh(keys + self.query(h).unsqueeze(1))  # [B, S, H]
        weights = torch.softmax(self.score(energy).squeeze(2), dim=1)
        context = torch.bmm(weights.unsqueeze(1), memory).squeeze(1)
        return self.out(torch.cat([h, context], dim=1)), context, h, c


class Seq2SeqAttention(nn.Module):
    """An LSTM encoder-decoder with MLP attention, shaped like memfold's zoo:nmt."""

    def __init__(self, vocab=256, hidden=128, layers=1):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.encoder = nn.LSTM(hidden, hidden, layers, batch_first=True)
        self.key = nn.Linear(hidden, hidden)
        self.step = AttentionStep(vocab, hidden)

    def forward(self, src, tgt):
        memory, (h, c) = self.encoder(self.embed(src))
        h, c = h[-1], c[-1]
        keys = self.key(memory)
        context = torch.zeros_like(h)
        logits = []
        for t in range(tgt.shape[1]):
            out, context, h, c = self.step(self.embed(tgt[:, t]), context, h, c, keys, memory)
            logits.append(out)
        return torch.stack(logits, dim=1)


class TransformerSeq2Seq(nn.Module):
    def __init__(self, vocab=256, d_model=128, heads=4, layers=2, dropout=0.1):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.transformer = nn.Transformer(d_model, heads, layers, layers, 4 * d_model, dropout,
                                          batch_first=True)
        self.out = nn.Linear(d_model, vocab)

    def forward(self, src, tgt):
        return self.out(self.transformer(self.embed(src), self.embed(tgt)))


class DeepSpeech2(nn.Module):
    """Two 2-D convolutions over the spectrogram, then bidirectional LSTMs and a classifier."""

    def __init__(self, features=64, hidden=128, classes=29):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(1, 16, (11, 11), stride=(2, 2), padding=(5, 5)), nn.BatchNorm2d(16),
            nn.Hardtanh(0, 20),
            nn.Conv2d(16, 16, (11, 11), stride=(2, 1), padding=(5, 5)), nn.BatchNorm2d(16),
            nn.Hardtanh(0, 20))
        self.rnn = nn.LSTM(16 * features // 4, hidden, 2, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(2 * hidden, classes)

    def forward(self, spec):  # [B, 1, features, time]
        x = self.conv(spec)
        b, c, f, t = x.shape
        x = x.permute(0, 3, 1, 2).reshape(b, t, c * f)
        x, _ = self.rnn(x)
        return self.fc(x)


def nmt(hidden=128, batch=16, vocab=256):
    model = Seq2SeqAttention(vocab, hidden)
    src = torch.randint(0, vocab, (batch, 24))
    tgt = torch.randint(0, vocab, (batch, 16))
    return model, (src, tgt), [model.encoder, model.step]


def transformer():
    model = TransformerSeq2Seq()
    src = torch.randint(0, 256, (8, 32))
    tgt = torch.randint(0, 256, (8, 32))
    blocks = list(model.transformer.encoder.layers) + list(model.transformer.decoder.layers)
    return model, (src, tgt), blocks


def resnet(depth):
    model = getattr(torchvision.models, "resnet%d" % depth)(num_classes=100)
    blocks = [model.layer1, model.layer2, model.layer3, model.layer4]
    return model, (torch.randn(8, 3, 64, 64),), blocks


def deepspeech2(frames=100):
    model = DeepSpeech2()
    return model, (torch.randn(8, 1, 64, frames),), [model.conv, model.rnn]


def torchvision_model(name, batch=8, resolution=64):
    """Any torchvision classifier by name (100 classes), on random images."""
    model = getattr(torchvision.models, name)(num_classes=100)
    return model, (torch.randn(batch, 3, resolution, resolution),), []


def build(name):
    """A model of MODELS, or "torchvision:NAME" for any torchvision classifier."""
    if name.startswith("torchvision:"):
        return torchvision_model(name.split(":", 1)[1])
    return MODELS[name]()


MODELS = {
    "nmt": nmt,
    # The same at a size where arithmetic, not per-operator dispatch, dominates the step.
    "nmt-512": lambda: nmt(hidden=512, batch=64, vocab=1024),
    "transformer": transformer,
    "resnet18": lambda: resnet(18),
    "resnet50": lambda: resnet(50),
    "deepspeech2": deepspeech2,
}
